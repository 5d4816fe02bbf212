/**
 * What a run's log holds, kept up to date as events arrive (one `note` per event, never a scan of
 * the log): the kinds of event, the metric names, and the few shapes of data a view needs to know
 * exist — pipeline stage actions, communication between two computations, data-parallel buckets.
 * The view registry (views/registry.js) picks the lesson page's panels from it, so the same page
 * serves every lesson, and code nobody here wrote, with no lesson ids.
 */

/** A run's statuses once it stopped: its log holds one at its end. */
export const FINAL_STATUSES = ["done", "failed", "cancelled"];
const SPAN_KINDS = new Set(["compute", "collective", "p2p"]);

/** An empty summary: the log of a run that has sent nothing yet. */
export function emptyContents() {
  return {
    kinds: new Set(),          // event kinds seen: "collective", "p2p", "compute", "tensor", …
    metrics: new Set(),        // metric names seen
    reported: new Map(),       // metric name → its event (rank 0's), wherever it lies in the log
    stagedCompute: false,      // a compute span of a pipeline stage (its event names a `stage`)
    commBetweenCompute: false, // some rank computed, called a collective, then computed again
    buckets: false,            // a collective carries a data-parallel bucket
    gated: new Set(),          // the kinds of call ranks stopped before in step mode: "p2p", "collective"
    origins: false,            // a tensor snapshot says which ranks each element came from (`origin`)
    placements: false,         // a collective of a DTensor redistribution (its event carries `placements`)
    output: false,             // some rank printed something (the server's `log` of level "output")
    ranks: new Map(),          // rank → "computed" | "communicated after computing"
    hosts: new Map(),          // a traced torchrun job's node → its latest `host` event (its ranks, its clock)
    spanTimes: null,           // where the ranks' spans lie: {computeStart: the first computation's begin, end: the last span event's t}
    ended: false,              // the log holds the run's final status: it is whole
  };
}

/** A bucket number from the event's `bucket` field, or from a "bucket 2 …" label where a lesson has no field yet. */
export function bucketOf(e) {
  if (Number.isInteger(e.bucket)) return e.bucket;
  const m = /^bucket (\d+)/.exec(e.label || "");
  return m ? Number(m[1]) : null;
}

/** Take one event into the summary. */
export function noteEvent(contents, e) {
  contents.kinds.add(e.kind);
  if (e.kind === "metric") {
    contents.metrics.add(e.name);
    if (!contents.reported.has(e.name) || e.rank === 0) contents.reported.set(e.name, e);
  }
  if (e.kind === "host") contents.hosts.set(e.node, e);
  if (e.kind === "run" && FINAL_STATUSES.includes(e.status)) contents.ended = true;
  if (SPAN_KINDS.has(e.kind) && e.rank !== null && e.rank !== undefined && typeof e.t === "number") noteSpanTime(contents, e);
  if (e.kind === "gate") contents.gated.add(e.call === "p2p" ? "p2p" : "collective");
  if (e.kind === "tensor" && Array.isArray(e.origin)) contents.origins = true;
  if (e.kind === "log" && e.level === "output") contents.output = true;
  if (e.kind === "compute" && e.phase === "begin") {
    if (e.stage !== undefined && e.stage !== null) contents.stagedCompute = true;
    if (contents.ranks.get(e.rank) === "communicated") contents.commBetweenCompute = true;
    else contents.ranks.set(e.rank, contents.ranks.get(e.rank) || "computed");
  }
  if (e.kind === "collective" && e.phase === "begin") {
    if (contents.ranks.get(e.rank) === "computed") contents.ranks.set(e.rank, "communicated");
    if (bucketOf(e) !== null) contents.buckets = true;
    if (e.placements) contents.placements = true;
  }
}

function noteSpanTime(contents, e) {
  const times = (contents.spanTimes ??= { computeStart: null, end: e.t });
  times.end = Math.max(times.end, e.t);
  if (e.kind === "compute" && e.phase === "begin") times.computeStart = Math.min(times.computeStart ?? e.t, e.t);
}
