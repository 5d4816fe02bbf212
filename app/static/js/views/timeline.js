/**
 * The ranks' timeline as a Gantt chart: per rank a compute lane and a communication lane, on one
 * time axis in ms, from the spans at the cursor. In data parallelism a thin lane between them marks
 * where an all-reduce runs while the rank still computes — the communication the buckets hide behind
 * the backward of the earlier layers. In 3D parallelism the calls are coloured by their group (TP,
 * PP, DP) and the sends point at the recvs that took them.
 */

import { changed, fill, h, remPx, sizeOf } from "paralab/dom.js";
import { t, tText } from "paralab/i18n.js";
import { bucketOf } from "paralab/log-contents.js";
import { formatMs, ganttFrame, ganttSvg, timeAxis } from "paralab/views/gantt.js";
import { GROUP_COLOURS } from "paralab/palette.js";

export { GROUP_COLOURS };
const COMPUTE_COLOURS = { forward: "#2563eb", backward: "#16a34a", optimizer: "#7c3aed", other: "#64748b" };
const BUCKET_COLOURS = ["#ea580c", "#0d9488", "#c026d3", "#ca8a04", "#0284c7", "#be123c"];
const OP_COLOURS = { all_reduce: "#b45309", reduce_scatter: "#0f766e", all_gather: "#db2777" };
const P2P_COLOUR = "#475569";

/** "tp", "pp", "dp" from a group's name ("tp", "tp3", …), else the name itself. */
export function groupKind(group) {
  const m = /^(tp|pp|dp)\d*$/.exec(group || "");
  return m ? m[1] : group || "world";
}

/** The time every drawn span lies in: from the first begin to the last end (or the cursor's time, while open). */
export function spanExtent(state, keep = () => true) {
  let start = Infinity;
  let end = -Infinity;
  for (const rs of state.ranks) {
    for (const sp of rs.spans) {
      if (!keep(sp)) continue;
      start = Math.min(start, sp.t0);
      end = Math.max(end, sp.t1 ?? state.tNow);
    }
  }
  return Number.isFinite(start) ? { start, end: Math.max(end, start + 1e-3) } : null;
}

/**
 * Each recv with the send it took: sends and recvs between the same two ranks with the same tag
 * pair in order (as the Chrome trace pairs them). Returns [{send, recv}] for the recvs that ended.
 */
export function pairSendRecv(p2p) {
  const sends = new Map();
  for (const sp of p2p) {
    if (sp.op !== "send") continue;
    const key = `${sp.rank}>${sp.peer}#${sp.tag ?? 0}`;
    if (!sends.has(key)) sends.set(key, []);
    sends.get(key).push(sp);
  }
  const pairs = [];
  for (const sp of p2p) {
    if (sp.op !== "recv" || sp.peer === null || sp.peer === undefined) continue;
    const queue = sends.get(`${sp.peer}>${sp.rank}#${sp.tag ?? 0}`);
    const send = queue?.shift();
    if (send && sp.t1 !== null) pairs.push({ send, recv: sp });
  }
  return pairs;
}

/** A send/recv as blocks of the communication lane: a recv as a bar (the rank waits in it), a send as a tick. */
export function p2pBlock(sp, state, extra = {}) {
  const dur = (sp.t1 ?? state.tNow) - sp.t0;
  const what = () => sp.label || t(sp.op === "send" ? "{op} to rank {peer}" : "{op} from rank {peer}", sp);
  // Titles are written when asked for: a big run's chart (a canvas) asks only for the block hovered.
  if (sp.op === "send") {
    return { t0: sp.t0, tick: true, fill: P2P_COLOUR, cls: "send", get title() { return `rank ${sp.rank}: ${what()} ${t("(to rank {peer})", sp)}`; }, ...extra };
  }
  return { t0: sp.t0, t1: sp.t1 ?? state.tNow, fill: "#cbd5e1", stroke: P2P_COLOUR, cls: ["recv", sp.t1 === null && "open"], ink: "#1e293b",
           get title() { return `rank ${sp.rank}: ${what()} ${t("(from rank {peer})", sp)} — ${sp.t1 === null ? t("waiting") : formatMs(dur)}`; }, ...extra };
}

/** Arrows from each send to the end of the recv that took it; the ones at the cursor drawn dark. */
export function p2pArrows(state, rowOf) {
  const seq = state.event?.seq;
  return pairSendRecv(state.p2p).map(({ send, recv }) => ({
    from: { row: rowOf(send.rank), t: send.t0 },
    to: { row: rowOf(recv.rank), t: recv.t1 },
    cls: [(send.seq === seq || recv.end?.seq === seq || recv.seq === seq) && "current"],
    title: `rank ${send.rank} → rank ${recv.rank}${send.label ? `: ${send.label.replace(/^send /, "")}` : ""}`,
  })).filter((a) => a.from.row !== undefined && a.to.row !== undefined);
}

function computeKind(name) {
  if (/^(F|forward)/i.test(name)) return "forward";
  if (/^(B|I|W|backward|B layer)/.test(name) || /backward/i.test(name)) return "backward";
  if (/optimizer|adam|sgd|step/i.test(name)) return "optimizer";
  return "other";
}

function computeText(sp) {
  const name = sp.name || "";
  const layer = /^B layer (\d+)/.exec(name);
  if (layer) return { text: `B layer ${layer[1]}`, short: `B${layer[1]}` };
  if (sp.begin?.microbatch !== undefined && sp.begin?.microbatch !== null) return { text: `${name}${sp.begin.microbatch}`, short: `${sp.begin.microbatch}` };
  const words = tText(name.replace(/ \d+$/, ""));
  return { text: words, short: words.split(/[ +]/)[0] };
}

function collectiveLook(sp, topology) {
  const b = bucketOf(sp.begin || sp);
  if (b !== null) {
    return { fill: BUCKET_COLOURS[b % BUCKET_COLOURS.length], text: t("bucket {b}", { b }), short: `${b}`, bucket: b };
  }
  const kind = groupKind(sp.group);
  const op = (sp.op || "").replace(/_/g, "-");
  const short = { all_reduce: "AR", all_gather: "AG", reduce_scatter: "RS", broadcast: "BC", all_to_all: "A2A" }[sp.op] || op.slice(0, 2);
  if (topology && GROUP_COLOURS[kind]) return { fill: GROUP_COLOURS[kind], ink: "#1e293b", text: `${kind} ${op}`, short: kind.toUpperCase() };
  return { fill: OP_COLOURS[sp.op] || GROUP_COLOURS.world, text: op, short };
}

/** Merge [t0, t1] intervals. */
function union(intervals) {
  const sorted = intervals.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  const out = [];
  for (const [a, b] of sorted) {
    if (out.length && a <= out[out.length - 1][1]) out[out.length - 1][1] = Math.max(out[out.length - 1][1], b);
    else out.push([a, b]);
  }
  return out;
}

function intersect(as, bs) {
  const out = [];
  let i = 0;
  let j = 0;
  while (i < as.length && j < bs.length) {
    const a = Math.max(as[i][0], bs[j][0]);
    const b = Math.min(as[i][1], bs[j][1]);
    if (b > a) out.push([a, b]);
    if (as[i][1] < bs[j][1]) i++;
    else j++;
  }
  return out;
}

const total = (intervals) => intervals.reduce((sum, [a, b]) => sum + (b - a), 0);

/** One rank's rows of blocks, and how much of its collective time ran while it computed. */
function rankRow(rs, state, topology) {
  const end = (sp) => sp.t1 ?? state.tNow;
  const compute = rs.spans.filter((sp) => sp.kind === "compute");
  const collectives = rs.spans.filter((sp) => sp.kind === "collective");
  const p2p = rs.spans.filter((sp) => sp.kind === "p2p");
  const computeBlocks = compute.map((sp) => {
    const kind = computeKind(sp.name || "");
    return { t0: sp.t0, t1: end(sp), fill: COMPUTE_COLOURS[kind], ...computeText(sp), cls: ["compute", kind, sp.t1 === null && "open"],
             title: `rank ${rs.rank}: ${tText(sp.name)}${sp.t1 === null ? ` ${t("(running)")}` : ` — ${formatMs(sp.t1 - sp.t0)}`}` };
  });
  const commBlocks = [
    ...collectives.map((sp) => {
      const look = collectiveLook(sp, topology);
      return { t0: sp.t0, t1: end(sp), fill: look.fill, ink: look.ink, text: look.text, short: look.short,
               cls: ["collective", sp.t1 === null && "open", look.bucket !== undefined && "bucket"],
               data: { "data-group": groupKind(sp.group), ...(look.bucket !== undefined ? { "data-bucket": look.bucket } : {}) },
               title: `rank ${rs.rank}: ${sp.op} (${sp.group} #${sp.cseq})${sp.label ? ` — ${tText(sp.label)}` : ""}: ${sp.t1 === null ? t("in flight") : formatMs(sp.t1 - sp.t0)}` };
    }),
    ...p2p.map((sp) => p2pBlock(sp, state)),
  ];
  const busy = union(compute.map((sp) => [sp.t0, end(sp)]));
  const comm = union(collectives.map((sp) => [sp.t0, end(sp)]));
  const both = intersect(busy, comm);
  return { computeBlocks, commBlocks, both, commTime: total(comm), overlapTime: total(both), busyTime: total(busy) };
}

/** The panel: legend, chart, and the overlap in words. Returns whether there is anything to draw. */
/** ctx.contents: what the whole log holds; a log with data-parallel buckets gets the overlap lane. */
export function renderTimeline(container, state, { runId, contents }) {
  const extent = spanExtent(state);
  if (!extent) {
    changed(container, "none");
    fill(container, h("p", { class: "empty" }, "No compute or communication yet at this step."));
    return true;
  }
  const rem = remPx();
  const width = Math.max(480, sizeOf(container).width || 900);
  const key = [runId, state.index, width, rem].join(",");
  if (!changed(container, key)) return true;
  const topology = Boolean(state.topology);
  const overlapLane = Boolean(contents?.buckets);
  const axis = timeAxis(extent.start, extent.end);
  const frame = ganttFrame({ width, rem });
  const stats = [];
  const rows = state.ranks.map((rs) => {
    const r = rankRow(rs, state, topology);
    stats.push({ rank: rs.rank, ...r });
    const lanes = [{ height: 1.5, cls: "compute-lane", blocks: r.computeBlocks }];
    if (overlapLane) {
      lanes.push({ height: 0.55, cls: "overlap-lane", blocks: r.both.map(([a, b]) => ({ t0: a, t1: b, fill: "url(#gantt-hatch)", cls: "overlap",
        title: t("rank {rank} computes and communicates at once: {time}", { rank: rs.rank, time: formatMs(b - a) }) })) });
    }
    lanes.push({ height: 1.15, cls: "comm-lane", blocks: r.commBlocks });
    const share = r.commTime > 0 ? r.overlapTime / r.commTime : null;
    return overlapLane
      ? { rank: rs.rank, lanes, right: share === null ? "" : t("{percent}% hidden", { percent: Math.round(100 * share) }),
          rightTitle: "share of this rank's all-reduce time that ran while it was still computing" }
      : { rank: rs.rank, sub: topology ? coordinateText(state.topology, rs.rank) : null, lanes };
  });
  const rowOf = (rank) => (rank < rows.length ? rank : undefined);
  const svg = ganttSvg({ rows, arrows: p2pArrows(state, rowOf), axis, frame, now: state.event?.t ?? null, className: "timeline-chart",
                         ariaLabel: t("timeline of {n} ranks: compute above, communication below", { n: rows.length }) });
  fill(container,
    legend(state, { topology, overlapLane }),
    h("div", { class: "gantt-wrap" }, svg),
    overlapLane ? overlapSummary(stats, state) : null);
  return true;
}

function coordinateText(topology, rank) {
  const c = topology.coordinates?.[rank];
  return c ? `d${c[0]} s${c[1]} t${c[2]}` : null;
}

function swatch(colour, text, cls) {
  return h("span", { class: ["key", cls] }, h("span", { class: "swatch", style: { background: colour } }), text);
}

/** The legend of what the chart shows so far: only the kinds of blocks present. */
function legend(state, { topology, overlapLane }) {
  const buckets = new Set();
  const kinds = new Set();
  const ops = new Set();
  const groups = new Set();
  for (const rs of state.ranks) {
    for (const sp of rs.spans) {
      const b = sp.kind === "collective" ? bucketOf(sp.begin || sp) : null;
      if (b !== null) buckets.add(b);
      if (sp.kind === "compute") kinds.add(computeKind(sp.name || ""));
      if (sp.kind === "collective") { ops.add(sp.op); groups.add(groupKind(sp.group)); }
    }
  }
  const names = { forward: "forward", backward: "backward", optimizer: "optimizer", other: "other compute" };
  return h("div", { class: "gantt-legend" },
    Object.keys(names).filter((k) => kinds.has(k)).map((k) => swatch(COMPUTE_COLOURS[k], names[k])),
    topology
      ? [["tp", "TP collective"], ["dp", "DP collective"]].filter(([k]) => groups.has(k)).map(([k, text]) => swatch(GROUP_COLOURS[k], text))
      : buckets.size
        ? [...buckets].sort((a, b) => a - b).map((b) => swatch(BUCKET_COLOURS[b % BUCKET_COLOURS.length], t("bucket {b} all-reduce", { b })))
        : [...ops].map((op) => swatch(OP_COLOURS[op] || GROUP_COLOURS.world, op.replace(/_/g, "-"))),
    state.p2p.length ? swatch("#cbd5e1", "recv (waiting for data)", "recv-key") : null,
    overlapLane ? h("span", { class: "key" }, h("span", { class: "swatch hatch" }), "compute and all-reduce at once") : null);
}

function overlapSummary(stats, state) {
  const withComm = stats.filter((st) => st.commTime > 0);
  if (!withComm.length) return h("p", { class: "gantt-summary" }, "No all-reduce yet at this step.");
  const comm = withComm.reduce((a, st) => a + st.commTime, 0);
  const hidden = withComm.reduce((a, st) => a + st.overlapTime, 0);
  const share = hidden / comm;
  const bucketed = state.ranks.some((rs) => rs.spans.some((sp) => sp.kind === "collective" && bucketOf(sp.begin || sp) !== null));
  return h("p", { class: ["gantt-summary", share > 0.2 ? "good" : "bad"] },
    h("strong", {}, t("{percent}% of the all-reduce time ran while the ranks were still computing", { percent: Math.round(100 * share) })),
    ` ${t("({hidden} of {total} per rank).", { hidden: formatMs(hidden / withComm.length), total: formatMs(comm / withComm.length) })} `,
    bucketed
      ? "Each bucket's all-reduce is launched from a gradient hook the moment its last gradient is ready, and waited on only after backward: it travels while the earlier layers' backward runs."
      : "Naive data parallel starts every all-reduce after the whole backward: nothing overlaps, the ranks wait for the network.");
}
