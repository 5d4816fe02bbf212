/**
 * The state at the cursor: a pure fold over `log[0..cursor]`. Every view draws from this and
 * nothing else, so the picture at step N is the same whichever way the viewer arrived there.
 */

import { t, tPlural, tText } from "paralab/i18n.js";
import { FINAL_STATUSES } from "paralab/store.js";

/**
 * The key of one collective call: its group and per-group sequence number, and the members — several
 * groups may share a teaching name (every 3D-parallel rank calls its own tensor-parallel group "tp").
 */
export function collectiveKey(e) {
  return e.ranks && e.ranks.length ? `${e.group}[${e.ranks.join(",")}]#${e.cseq}` : `${e.group}#${e.cseq}`;
}

/** "workers/lessons/tp_mlp/program.py:44" → {path, line}. */
export function parseSite(site) {
  if (!site) return null;
  const at = site.lastIndexOf(":");
  const line = Number(site.slice(at + 1));
  return at > 0 && Number.isInteger(line) ? { path: site.slice(0, at), line } : null;
}

function rankState(rank) {
  return { rank, open: [], spans: [], last: null, site: null, error: null, output: null, events: 0, gate: null, gates: 0, finished: false };
}

/**
 * Everything the views need at log index `cursor`.
 * `worldSize` names the ranks before any of their events arrived.
 */
export function stateAt(log, cursor, worldSize = 0) {
  const state = emptyState(worldSize);
  foldEvents(state, log, 0, cursor);
  return finish(state, log, cursor);
}

/**
 * `stateAt`, remembering the last state it made: a move forwards folds only the events stepped over
 * (a → step on a run of 20,000 events is one event, not 20,000). A move back, or a long one forwards,
 * folds from the nearest checkpoint before the cursor — a copy of the state kept every
 * `CHECKPOINT_EVERY` events as folds pass there — not from the start.
 * The state it returned before is changed in place by a later call: draw from the latest only.
 */
export function foldCache() {
  let last = null;          // {log, worldSize, upTo, state}
  let checkpoints = [];     // [{upTo, state}], by upTo: copies of the state folded up to log index upTo
  return (log, cursor, worldSize = 0) => {
    if (last && (last.log !== log || last.worldSize !== worldSize)) checkpoints = [];
    const before = checkpoints.findLast((c) => c.upTo <= cursor);
    // Forwards, from the last state, unless a checkpoint on the way saves folding more than a stretch.
    const reuse = last && last.log === log && last.worldSize === worldSize && cursor >= last.upTo && last.upTo >= 0
      && !(before && before.upTo - last.upTo > CHECKPOINT_EVERY);
    let state;
    let from;
    if (reuse) {
      state = last.state;
      from = last.upTo + 1;
    } else {
      state = before ? copyState(before.state) : emptyState(worldSize);
      from = before ? before.upTo + 1 : 0;
    }
    const to = Math.min(cursor, log.length - 1);
    // Fold in pieces that end at the checkpoints, keeping a copy at each not kept yet.
    for (let next = (Math.floor(from / CHECKPOINT_EVERY) + 1) * CHECKPOINT_EVERY - 1; next <= to; next += CHECKPOINT_EVERY) {
      foldEvents(state, log, from, next);
      from = next + 1;
      if (!checkpoints.some((c) => c.upTo === next)) {
        checkpoints.push({ upTo: next, state: copyState(state) });
        checkpoints.sort((a, b) => a.upTo - b.upTo);
      }
    }
    foldEvents(state, log, from, cursor);
    last = { log, worldSize, upTo: to, state };
    return finish(state, log, cursor);
  };
}

/** How many events apart `foldCache` keeps copies of the state: a move back folds fewer than this. */
export const CHECKPOINT_EVERY = 512;

/**
 * A copy of a folded state that folding more events into does not change the original (nor the
 * original the copy): its containers are copied; events, and spans (replaced, not changed, when they
 * end), are shared.
 */
function copyState(state) {
  const collectives = new Map([...state.collectives].map(([key, c]) => [key, { ...c, begins: new Map(c.begins), ends: new Map(c.ends) }]));
  const mapOf = (map, copy) => new Map([...map].map(([key, value]) => [key, copy(value)]));
  return {
    ...state,
    ranks: state.ranks.map((rs) => ({ ...rs, open: rs.open.slice(), spans: rs.spans.slice() })),
    collectives,
    current: state.current ? collectives.get(state.current.key) : null,
    sent: state.sent.slice(),
    placed: mapOf(state.placed, (p) => ({ ...p, shards: new Map(p.shards) })),
    loose: mapOf(state.loose, (byRank) => new Map(byRank)),
    snapshots: mapOf(state.snapshots, (list) => list.slice()),
    checks: mapOf(state.checks, (c) => ({ ...c, rows: new Map(c.rows) })),
    metrics: new Map(state.metrics),
    series: mapOf(state.series, (list) => list.slice()),
    rankMetrics: mapOf(state.rankMetrics, (byRank) => mapOf(byRank, (list) => list.slice())),
    p2p: state.p2p.slice(),
  };
}

function emptyState(worldSize) {
  const state = {
    event: null,
    index: -1,
    total: 0,
    run: { status: "none", error: null, position: null, backend: null },
    ranks: [],
    collectives: new Map(),   // "group#cseq" → what each member has done in it
    current: null,            // the collective touched last
    sent: [],                 // rank 0's begin events: what the block communicates
    placed: new Map(),        // full tensor name → {fullShape, shards: Map rank → {offset, tensor, seq}}
    loose: new Map(),         // tensor name → Map rank → {tensor, seq, origin}
    snapshots: new Map(),     // rank → its tensor events in order
    checks: new Map(),        // check name → {detail, atol, rows: Map rank → event}
    metrics: new Map(),       // metric name → event
    series: new Map(),        // metric name → [event, …] (rank 0's, in order): e.g. the cost sweep
    rankMetrics: new Map(),   // metric name → Map rank → [event, …] in order (every rank's)
    schedule: null,           // a pipeline run's ideal grid (rank 0's `schedule` event)
    topology: null,           // a 3D-parallel run's process-group grid (rank 0's `topology` event)
    p2p: [],                  // every send/recv span: {rank, op, peer, tag, label, begin, end}
    p2pSeq: 0,                // the seq of the last event that began or ended one (p2p is the same until the next)
    gated: false,             // some rank has stopped at a step-mode gate
    site: null,               // {path, line, rank, seq}: where the code is at the cursor
    tNow: 0,
  };
  for (let r = 0; r < worldSize; r++) rankOf(state, r);
  return state;
}

function rankOf(state, r) {
  while (state.ranks.length <= r) state.ranks.push(rankState(state.ranks.length));
  return state.ranks[r];
}

/** Fold log[from..to] into `state`. */
function foldEvents(state, log, from, to) {
  for (let i = from; i <= to && i < log.length; i++) {
    const e = log[i];
    state.tNow = Math.max(state.tNow, e.t || 0);
    if (e.kind === "run") {
      state.run = { ...state.run, status: e.status, position: e.position ?? null,
                    backend: e.backend ?? state.run.backend, error: e.error ?? null, seq: e.seq };
      continue;
    }
    if (e.rank === null || e.rank === undefined) continue;
    const rs = rankOf(state, e.rank);
    rs.last = e;
    rs.events += 1;
    if (e.site) rs.site = { ...parseSite(e.site), rank: e.rank, seq: e.seq };
    switch (e.kind) {
      case "compute":
      case "collective":
      case "p2p":
        span(state, rs, e);
        break;
      case "tensor":
        tensor(state, e);
        break;
      case "check": {
        if (!state.checks.has(e.name)) state.checks.set(e.name, { name: e.name, detail: e.detail, atol: e.atol, rows: new Map() });
        state.checks.get(e.name).rows.set(e.rank, e);
        break;
      }
      case "metric":
        if (!state.metrics.has(e.name) || e.rank === 0) state.metrics.set(e.name, e);
        if (e.rank === 0) {
          if (!state.series.has(e.name)) state.series.set(e.name, []);
          state.series.get(e.name).push(e);
        }
        if (!state.rankMetrics.has(e.name)) state.rankMetrics.set(e.name, new Map());
        if (!state.rankMetrics.get(e.name).has(e.rank)) state.rankMetrics.get(e.name).set(e.rank, []);
        state.rankMetrics.get(e.name).get(e.rank).push(e);
        break;
      case "schedule":
        state.schedule = e;
        break;
      case "topology":
        state.topology = e;
        break;
      case "gate":
        state.gated = true;
        if (e.phase === "waiting") {
          rs.gate = e;
          rs.gates += 1;
        } else rs.gate = null;
        break;
      case "log":
        if (e.level === "error") rs.error = e;
        if (e.level === "output") rs.output = e;   // the tail of what the rank printed (the server's, at its end)
        break;
      case "rank":
        rs.finished = e.status === "finished";
        break;
    }
  }
}

/** The fields that say where the cursor is, on a state folded up to `cursor`. */
function finish(state, log, cursor) {
  state.event = cursor >= 0 ? log[cursor] : null;
  state.index = cursor;
  state.total = log.length;
  state.site = null;
  const event = state.event;
  const stuck = event && event.kind === "run" && event.error?.kind === "hang" ? hangSite(event.error) : null;
  if (stuck) state.site = { ...stuck, seq: event.seq };
  else if (event && event.kind === "run" && event.error?.site) {
    state.site = { ...parseSite(event.error.site), rank: event.error.rank ?? null, seq: event.seq };
  } else if (event && event.site) state.site = { ...parseSite(event.site), rank: event.rank, seq: event.seq };
  else if (event && event.rank !== null && event.rank !== undefined) state.site = state.ranks[event.rank]?.site || null;
  state.final = FINAL_STATUSES.includes(state.run.status);
  return state;
}

/** The line a hung run is stuck at: the stuck call of the first rank that waits in it. */
function hangSite(error) {
  for (const [rank, groups] of Object.entries(error.ranks || {}).sort((a, b) => Number(a[0]) - Number(b[0]))) {
    const g = groups[error.group] || groups.p2p;
    const begun = g?.last_begun;
    if (!begun || (g.last_completed && begun.cseq !== undefined && begun.cseq === g.last_completed.cseq)) continue;
    const site = parseSite(begun.site);
    if (site) return { ...site, rank: Number(rank) };
  }
  return null;
}

function span(state, rs, e) {
  if (e.phase === "begin") {
    const open = { kind: e.kind, name: e.name, op: e.op, label: e.label, group: e.group, cseq: e.cseq, ranks: e.ranks,
                   peer: e.peer, tag: e.tag, rank: e.rank, t0: e.t, t1: null, seq: e.seq, begin: e, end: null,
                   at: rs.spans.length, p2pAt: e.kind === "p2p" ? state.p2p.length : null };
    rs.open.push(open);
    rs.spans.push(open);
    if (e.kind === "p2p") {
      state.p2p.push(open);
      state.p2pSeq = e.seq;
    }
  } else {
    // The oldest open span this end closes (isend/irecv may have several open at once).
    // Compute spans nest: the innermost of that name. Calls: the oldest that matches (several sends
    // through isend may be open at once).
    const matches = (o) => o.kind === e.kind && (e.kind === "compute" ? o.name === e.name
      : e.kind === "p2p" ? o.op === e.op && (o.peer === e.peer || o.peer === null || o.peer === undefined) && o.tag === e.tag
        : o.op === e.op && o.cseq === e.cseq);
    const k = e.kind === "compute" ? rs.open.findLastIndex(matches) : rs.open.findIndex(matches);
    if (k >= 0) {
      // The span is replaced by its closed copy, not changed: a checkpoint (copyState) shares the open one.
      const o = rs.open[k];
      const peer = e.kind === "p2p" && (o.peer === null || o.peer === undefined) ? e.peer : o.peer;
      const closed = { ...o, t1: e.t, error: e.error || null, end: e, peer };
      rs.spans[o.at] = closed;
      if (o.p2pAt !== null) {
        state.p2p[o.p2pAt] = closed;
        state.p2pSeq = e.seq;
      }
      rs.open.splice(k, 1);
    }
  }
  if (e.kind !== "collective") return;
  const key = collectiveKey(e);
  let c = state.collectives.get(key);
  if (!c) {
    c = { key, op: e.op, group: e.group, cseq: e.cseq, ranks: e.ranks || [], label: e.label, site: e.site,
          reduceOp: e.reduce_op, root: e.root, shape: e.shape, bytes: e.bytes, begins: new Map(), ends: new Map() };
    state.collectives.set(key, c);
  }
  if (e.phase === "begin") {
    c.begins.set(e.rank, e);
    if (e.shape) c.shape = e.shape;
    if (e.rank === 0) state.sent.push(e);
  } else {
    c.ends.set(e.rank, e);
  }
  c.lastSeq = e.seq;
  state.current = c;
}

function tensor(state, e) {
  const entry = { tensor: e.tensor, seq: e.seq, rank: e.rank, name: e.name, origin: e.origin || null };
  if (!state.snapshots.has(e.rank)) state.snapshots.set(e.rank, []);
  state.snapshots.get(e.rank).push(entry);
  if (e.place) {
    const name = e.place.inside;
    if (!state.placed.has(name)) state.placed.set(name, { name, fullShape: e.place.full_shape, shards: new Map() });
    const placed = state.placed.get(name);
    placed.fullShape = e.place.full_shape;
    placed.shards.set(e.rank, { ...entry, offset: e.place.offset });
  } else {
    if (!state.loose.has(e.name)) state.loose.set(e.name, new Map());
    state.loose.get(e.name).set(e.rank, entry);
  }
}

/** What a rank is doing at the cursor, in words. */
export function activity(rs, state) {
  if (rs.error) return { kind: "error", text: t("raised {error}", { error: rs.error.message }) };
  if (rs.gate && !state.final) return { kind: "gate", text: t("waits at the gate before {call}", { call: callName(rs.gate) }), label: rs.gate.label };
  if (rs.finished && !state.final) return { kind: "finished", text: t("finished its program; waits for the others") };
  const open = rs.open[rs.open.length - 1];
  const outer = rs.open.length > 1 ? `${tText(rs.open[0].name) || rs.open[0].op} › ` : "";
  if (open && open.kind === "compute") return { kind: "compute", text: outer + t("computing {name}", { name: open.name }) };
  if (open && open.kind === "collective") {
    const c = state.collectives.get(collectiveKey(open));
    const missing = c ? c.ranks.filter((r) => !c.begins.has(r)) : [];
    const call = `${open.op} (${open.group} #${open.cseq})`;
    const text = missing.length
      ? tPlural(missing.length, "{call} — waiting for rank {ranks}", "{call} — waiting for ranks {ranks}", { call, ranks: missing.join(", ") })
      : call;
    return { kind: "collective", text: outer + text, waiting: missing.length > 0, label: open.label };
  }
  if (open && open.kind === "p2p") return { kind: "p2p", text: outer + p2pCall(open.op, open.peer), label: open.label };
  const last = rs.last;
  if (!last) return { kind: "idle", text: state.run.status === "queued" ? t("queued") : t("not started") };
  if (state.final) return finalActivity(rs, state);
  if (last.kind === "check") return { kind: "check", text: t(last.passed ? "checked {name}: passed" : "checked {name}: FAILED", { name: last.name }) };
  if (last.kind === "tensor") return { kind: "tensor", text: t("has {name}", { name: last.name }) };
  if (last.kind === "metric") return { kind: "metric", text: t("reported {name}", { name: last.name }) };
  if (last.phase === "end") return { kind: "idle", text: t("finished {name}", { name: last.name || last.op }) };
  return { kind: "idle", text: t("working") };
}

/** How a rank ended: a rank that reached the end of its program finished, even in a run that failed
 *  because of another rank (it only waited, then was stopped with the rest). */
function finalActivity(rs, state) {
  if (state.run.status === "done" || rs.finished) return { kind: "finished", text: t("finished") };
  return { kind: "finished", text: t("stopped ({status})", { status: t(state.run.status) }) };
}

/** "send to rank 1", "recv from rank 0", "recv from any rank", with " (tag 2)" when the tag is not 0. */
function p2pCall(op, peer, tag = 0) {
  const anyone = peer === null || peer === undefined;
  const key = `{op} ${op === "send" ? "to" : "from"} ${anyone ? "any rank" : "rank {peer}"}${tag ? " (tag {tag})" : ""}`;
  return t(key, { op, peer, tag });
}

/** "reduce_scatter (world #1)" or "send to rank 1 (tag 0)": a call as a gate or span names it. */
export function callName(e) {
  if (e.call === "p2p" || e.kind === "p2p") return p2pCall(e.op, e.peer, e.tag);
  return `${e.op} (${e.group} #${e.cseq})`;
}

/** One line about an event, for the caption under the scrubber. */
export function describe(e) {
  if (!e) return "";
  const who = e.rank === null || e.rank === undefined ? t("server") : t("rank {rank}", { rank: e.rank });
  const labelled = e.label && (["collective", "p2p"].includes(e.kind) || e.kind === "gate" && e.phase === "waiting");
  return t("{who}: {what}", { who, what: describeWhat(e) }) + (labelled ? ` — ${tText(e.label)}` : "");
}

/** What an event says, without who said it or the lesson's label for the call. */
function describeWhat(e) {
  const begins = e.phase === "begin";
  switch (e.kind) {
    case "run":
      return t(`run ${e.status}${e.position ? " (position {position} in the queue)" : ""}`, { position: e.position });
    case "compute":
      return t(begins ? "starts {name}" : "ends {name}", { name: e.name });
    case "collective":
      return t(begins ? "{op} begins ({group} #{cseq})" : "{op} ends ({group} #{cseq})", e);
    case "p2p":
      return t(begins ? "{call} begins" : "{call} ends", { call: callName(e) });
    case "gate":
      return t(e.phase === "waiting" ? "stops at the gate before {call}" : "released into {call}", { call: callName(e) });
    case "tensor":
      return t("shows {name} [{shape}]", { name: e.name, shape: (e.tensor?.shape || []).join("×") });
    case "check":
      return t(e.passed ? "check “{name}” passed (max |error| {error})" : "check “{name}” FAILED (max |error| {error})",
        { name: e.name, error: formatNumber(e.max_abs_err) });
    case "metric":
      return `${tText(e.name)} = ${e.value} ${tText(e.unit || "")}`;
    case "log":
      return `${t(e.level || "log")}: ${e.message}`;
    case "rank":
      return t("finished its program");
    default:
      return e.kind;
  }
}

export function formatNumber(x) {
  if (typeof x === "string") return x;
  if (x === null || x === undefined) return "–";
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e4 || a < 1e-3) return x.toExponential(2);
  return Number(x.toPrecision(4)).toString();
}

/** "rank 2", "ranks 0 and 1" or "ranks 0, 1 and 3", in the interface's language. */
export function rankList(ranks) {
  return tPlural(ranks.length, "rank {ranks}", "ranks {ranks}", { ranks: andList(ranks) || "–" });
}

/** "0, 1 and 3": a list in a sentence (the separators translated). */
export function andList(items) {
  if (items.length < 2) return items.join("");
  return items.slice(0, -1).join(t(", ")) + t(" and ") + items[items.length - 1];
}

const GROUPED = new Intl.NumberFormat("en-US");   // one formatter: toLocaleString makes one per call

export function formatBytes(n) {
  return `${GROUPED.format(Number(n))} B`;
}
