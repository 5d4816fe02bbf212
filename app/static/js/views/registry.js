/**
 * The lesson page's panels, in the order the page shows them. Each view says what it draws — the
 * event kinds, fields and metric names it needs, as a predicate over what the whole log holds
 * (log-contents.js) — and how to draw the state at the cursor. The page (lesson-page.js, and through
 * it a lecture room and an exported run) makes one panel per view and shows the views whose data
 * the log holds: no lesson ids. How to add one: docs/frontend.md.
 *
 * A view:
 *   id       the panel's picture container is #id, its section #id-panel, its heading #h-id
 *   title    the heading, and `note` the smaller words beside it (English; the translator knows them)
 *   shows    (contents) → whether the log holds what this view draws
 *   metrics  the metric names it draws (the numbers panel shows the metrics no view claims)
 *   render   (container, state, ctx) → false when it has nothing to draw at this step (the panel hides)
 */

import { renderChecks } from "paralab/views/checks.js";
import { renderCollective } from "paralab/views/collective.js";
import { EXPECTED_METRIC, renderComm } from "paralab/views/comm.js";
import { COST_METRICS, renderCost } from "paralab/views/cost.js";
import { renderHosts } from "paralab/views/hosts.js";
import { renderLanes } from "paralab/views/lanes.js";
import { MEMORY_METRICS, renderMemory } from "paralab/views/memory.js";
import { renderNumbers } from "paralab/views/numbers.js";
import { originNames, renderOrigins } from "paralab/views/origins.js";
import { renderOutput } from "paralab/views/output.js";
import { PIPELINE_METRICS, renderPipeline } from "paralab/views/pipeline.js";
import { renderRing, ringNames, RING_METRICS } from "paralab/views/ring.js";
import { renderShards } from "paralab/views/shards.js";
import { renderTensors } from "paralab/views/tensors.js";
import { renderTimeline } from "paralab/views/timeline.js";
import { renderTopology, TOPOLOGY_METRICS } from "paralab/views/topology.js";

const has = (...kinds) => (contents) => kinds.some((kind) => contents.kinds.has(kind));
const hasMetric = (...names) => (contents) => names.some((name) => contents.metrics.has(name));

export const VIEWS = [
  { id: "pipeline", title: "Pipeline schedule", note: "measured above, the ideal grid below, rank by rank",
    needs: "compute events with a `stage` (and `microbatch`), or a `schedule` event",
    shows: (c) => c.stagedCompute || c.kinds.has("schedule"), metrics: PIPELINE_METRICS, render: renderPipeline },
  { id: "timeline", title: "Timeline", note: "each rank: compute above, communication below; hover a block",
    needs: "compute spans with a collective between two of them on one rank",
    shows: (c) => c.commBetweenCompute, render: renderTimeline },
  { id: "topology", title: "Process groups", note: "every rank at its (dp, stage, tp) place; a group lights up while it communicates",
    needs: "a `topology` event", shows: has("topology"), metrics: TOPOLOGY_METRICS, render: renderTopology },
  { id: "memory", title: "Memory per rank", note: "measured bytes against the ZeRO formula",
    needs: "the memory_* metrics", shows: hasMetric(...MEMORY_METRICS), metrics: MEMORY_METRICS, render: renderMemory },
  { id: "hosts", title: "Hosts", note: "the ranks host by host (a run on a Ray cluster, a torchrun job), each host's clock aligned with the server's",
    needs: "`host` events (a run on a Ray cluster, a job traced with paralab trace)", shows: has("host"), render: renderHosts },
  { id: "lanes", title: "Ranks", className: "lanes-panel", needs: "nothing: always shown",
    shows: () => true, always: true, render: (el, state, ctx) => renderLanes(el, state, ctx?.contents?.hosts) },
  { id: "ring", title: "Send / recv, step by step", note: "each rank's buffer; arrows carry the chunks sent in this step",
    needs: "send/recv events (or ranks stopped at a send/recv gate), unless the origins panel draws them",
    shows: (c) => (c.kinds.has("p2p") || c.gated.has("p2p")) && !c.origins, metrics: RING_METRICS, render: renderRing },
  { id: "collective", title: "Collective", needs: "collective events (or ranks stopped at a gate)",
    shows: (c) => c.kinds.has("collective") || c.gated.has("collective"), render: (el, state, ctx) => renderCollective(el, state, ctx?.runId ?? null) },
  { id: "shards", title: "DTensor placements", note: "what each rank holds of the global tensor, before and after",
    needs: "collectives of a DTensor redistribution (events with `mesh` and `placements`)",
    shows: (c) => c.placements, render: (el, state) => renderShards(el, state) },
  { id: "origins", title: "Before → after", note: "every number coloured by the rank(s) it came from; hover a cell to trace it",
    needs: "tensor snapshots with an `origin`", shows: (c) => c.origins, render: renderOrigins },
  { id: "tensors", title: "Tensors", note: "each rank's shard in place, outlined in its colour; hover for values",
    needs: "tensor snapshots (lab.show)", shows: has("tensor"),
    render: (el, state, ctx) => renderTensors(el, state, { ...ctx, skip: new Set([...originNames(state), ...ringNames(state)]) }) },
  { id: "numbers", title: "Numbers", note: "what the ranks measured, beside the lesson's formula",
    needs: "metrics no other view draws", shows: (c) => [...c.metrics].some((name) => !CLAIMED.has(name)),
    render: (el, state, ctx) => renderNumbers(el, state, { ...ctx, claimed: CLAIMED }) },
  { id: "checks", title: "Checks", note: "every rank against one process", needs: "check events",
    shows: has("check"), render: renderChecks },
  { id: "output", title: "Output", note: "what each rank printed (its last KiB)", needs: "`log` events of level output",
    shows: (c) => c.output, render: renderOutput },
  { id: "comm", title: "Communication", needs: "collective or send/recv events",
    shows: has("collective", "p2p"), metrics: [EXPECTED_METRIC], render: renderComm },
  { id: "cost", title: "Cost model", note: "measured time against the α–β model, over message sizes",
    needs: "the cost_sweep, alpha and beta metrics", shows: hasMetric(...COST_METRICS), metrics: COST_METRICS, render: renderCost },
];

/** Metric names some view draws: the numbers panel leaves them out. */
export const CLAIMED = new Set(VIEWS.flatMap((view) => view.metrics || []));

/** The views the page shows for a run whose log holds `contents` (all but `always` ones wait for a run). */
export function viewsFor(contents, { ran }) {
  return VIEWS.filter((view) => view.always || (ran && view.shows(contents)));
}
