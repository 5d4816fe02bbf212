/**
 * The state at the cursor as tables for the newer panels (pipeline, timeline, process groups, memory,
 * numbers, cost model, before → after): what a screen reader reads beside each picture, and what a viewer
 * can copy. Each function takes the folded state (replay.js) and the page's context {runId, worldSize,
 * lesson, params} and returns a <table>, a list of them, or null when there is nothing.
 */

import { formatRate, formatSeconds, formatSize } from "paralab/cost-model.js";
import { COST_METRICS } from "paralab/views/cost.js";
import { t, tText } from "paralab/i18n.js";
import { formatBytes, formatNumber, rankList } from "paralab/replay.js";
import { gridTable as grid } from "paralab/views/grid-table.js";
import { cellValue } from "paralab/views/heatmap.js";
import { MEMORY_METRICS, parseFormula } from "paralab/views/memory.js";
import { activationBound, bubbleFormula, parseAction, PIPELINE_METRICS } from "paralab/views/pipeline.js";
import { activeAt, TOPOLOGY_METRICS } from "paralab/views/topology.js";
import { groupKind, spanExtent } from "paralab/views/timeline.js";


const ms = (seconds) => `${(seconds * 1e3).toFixed(2)} ms`;
const pct = (x) => `${Math.round(100 * Math.min(1, x))}%`;
const actionText = (a) => `${a.kind}${a.mb ?? ""}`;

// ---- pipeline ----------------------------------------------------------------------------------------

/** Each rank's stage actions so far and its busy share; the ideal grid; the bubble fraction. */
export function pipelineTable(state, { params, cache } = {}) {
  const computeExtent = spanExtent(state, (sp) => sp.kind === "compute");
  if (!computeExtent && !state.schedule) return null;
  const makespan = computeExtent ? computeExtent.end - computeExtent.start : 0;
  const placement = state.schedule?.placement || null;
  const measured = grid("Measured schedule so far: each rank's stage actions in the order they ran",
    ["rank", "stages", "actions so far", "done", "busy", "busy share"],
    state.ranks.map((rs) => {
      let busy = 0;
      const actions = [];
      let done = 0;
      for (const sp of rs.spans) {
        if (sp.kind !== "compute") continue;
        busy += (sp.t1 ?? state.tNow) - sp.t0;
        if (sp.t1 !== null) done += 1;
        actions.push(`${sp.name}${sp.begin?.microbatch ?? ""}${sp.t1 === null ? ` ${t("(running)")}` : ""}`);
      }
      const stages = placement?.[rs.rank];
      return [`rank ${rs.rank}`, stages ? stages.join(", ") : "–", actions.join(" ") || "none yet", String(done), ms(busy),
        makespan > 0 ? pct(busy / makespan) : "–"];
    }), { cache, className: "pipeline-measured-table", rowAttrs: (r) => ({ "data-rank": state.ranks[r]?.rank }) });

  let ideal = null;
  if (state.schedule?.grid?.length) {
    const rows = state.schedule.grid;
    const cols = Math.max(1, ...rows.map((row) => row.length));
    const progress = new Map();
    for (const rs of state.ranks) {
      for (const sp of rs.spans) {
        if (sp.kind === "compute" && sp.begin?.stage !== undefined) {
          progress.set(`${sp.begin.stage}${sp.name}${sp.begin.microbatch}`, sp.t1 === null ? "running" : "done");
        }
      }
    }
    ideal = grid(t("Ideal {schedule} grid: each action one slot (–: idle); what the ranks have done at this step", state.schedule),
      ["rank", ...Array.from({ length: cols }, (_, c) => t("slot {c}", { c })), "busy", "done"],
      rows.map((row, r) => {
        let busy = 0;
        let done = 0;
        const cells = Array.from({ length: cols }, (_, c) => {
          const a = parseAction(row[c] ?? null);
          if (!a) return "–";
          busy += 1;
          const parts = a.overlap || [a];
          if (parts.every((x) => progress.get(`${x.stage}${x.kind}${x.mb}`) === "done")) done += 1;
          return parts.map(actionText).join("+");
        });
        return [`rank ${r}`, ...cells, `${Math.round((100 * busy) / cols)}%`, t("{done} of {total}", { done, total: busy })];
      }), { cache, className: "pipeline-ideal-table", rowAttrs: (r) => ({ "data-rank": r }) });
  }

  const p = state.ranks.length;
  const m = params?.microbatches ?? 0;
  const v = params?.virtual_stages ?? 1;
  const formula = bubbleFormula(state);
  const bubbleMeasured = state.metrics.get("bubble_fraction");
  const bubbleIdeal = state.metrics.get("bubble_fraction_ideal")?.value ?? state.schedule?.bubble_fraction;
  const fixed = (x) => (x === null || x === undefined ? "not yet" : x.toFixed(3));
  const bubble = grid("Bubble fraction: the share of rank-time spent idle", ["what", "value", "how"], [
    ["measured", fixed(bubbleMeasured?.value), "idle ÷ (ranks × makespan), timed by the ranks at the end of the run"],
    ["ideal grid", fixed(bubbleIdeal), "idle slots of the ideal grid"],
    ["formula", formula?.value != null ? formula.value.toFixed(3) : formula ? "no closed form" : "not yet",
      formula?.value != null ? `${formula.text} ${t(formula.text.includes("v") ? "with p = {p}, m = {m}, v = {v}" : "with p = {p}, m = {m}", { p, m, v })}`
        : formula?.text ?? "the lesson's formula arrives with its ideal grid"],
  ], { cache, className: "pipeline-bubble-table" });

  const peaks = state.rankMetrics.get("peak_activations_in_flight") || new Map();
  const series = state.rankMetrics.get("activations_in_flight") || new Map();
  const bytes = state.rankMetrics.get("peak_activation_bytes") || new Map();
  const activations = series.size || peaks.size
    ? grid("Activations in flight: microbatches each rank holds for its backward", ["rank", "now", "peak", "bound", "peak bytes"],
      state.ranks.map((rs) => {
        const list = series.get(rs.rank) || [];
        const reported = peaks.get(rs.rank)?.at(-1)?.value;
        const b = activationBound(state, rs.rank);
        const pb = bytes.get(rs.rank)?.at(-1)?.value;
        return [`rank ${rs.rank}`, String(list.at(-1)?.value ?? 0),
          reported !== undefined ? String(reported) : t("{n} so far", { n: Math.max(0, ...list.map((e) => e.value)) }),
          b ? `${b.text} = ${b.value}` : "–", pb !== undefined ? formatBytes(pb) : "–"];
      }), { cache, className: "pipeline-activations-table" })
    : null;
  return [measured, ideal, bubble, activations];
}

// ---- timeline ------------------------------------------------------------------------------------------

function spanName(sp) {
  if (sp.kind === "compute") return `${sp.name}${sp.begin?.microbatch ?? ""}`;
  if (sp.kind === "p2p") return sp.label || t(sp.op === "send" ? "{op} to rank {peer}" : "{op} from rank {peer}", sp);
  return `${sp.op} (${sp.group} #${sp.cseq})${sp.label ? ` — ${tText(sp.label)}` : ""}`;
}

function spanKind(sp) {
  if (sp.kind === "compute") return "compute";
  if (sp.kind === "p2p") return sp.op;
  return t("{kind} collective", { kind: groupKind(sp.group) });
}

/** Every span so far, in the order it began: rank, kind, name, start, end (ms since the first span). */
export function timelineTable(state, { cache } = {}) {
  const extent = spanExtent(state);
  if (!extent) return null;
  const spans = state.ranks.flatMap((rs) => rs.spans.map((sp) => ({ rank: rs.rank, sp })))
    .sort((a, b) => a.sp.t0 - b.sp.t0 || a.rank - b.rank);
  return grid(t("Timeline: {n} spans so far, times in ms since the first began", { n: spans.length }),
    ["rank", "kind", "name", "start", "end", "duration"],
    spans.map(({ rank, sp }) => [`rank ${rank}`, spanKind(sp), spanName(sp), ms(sp.t0 - extent.start),
      sp.t1 === null ? "running" : ms(sp.t1 - extent.start), sp.t1 === null ? "–" : ms(sp.t1 - sp.t0)]),
    { cache, className: "timeline-table", rowAttrs: (r) => ({ "data-rank": spans[r].rank, "data-kind": spans[r].sp.kind }) });
}

// ---- process groups --------------------------------------------------------------------------------------

/** Every group with its members, its calls so far and whether it communicates at the cursor; each rank's place. */
export function topologyTable(state, { cache } = {}) {
  const topo = state.topology;
  if (!topo) return null;
  const { groups, links } = activeAt(state);
  const same = (a, b) => a.length === b.length && [...a].sort((x, y) => x - y).every((r, i) => r === [...b].sort((x, y) => x - y)[i]);
  const rows = [];
  const attrs = [];
  for (const kind of ["tp", "pp", "dp"]) {
    (topo.groups?.[kind] || []).forEach((members, index) => {
      let calls = 0;
      for (const c of state.collectives.values()) if (groupKind(c.group) === kind && same(c.ranks, members)) calls += 1;
      if (kind === "pp") calls += state.p2p.filter((sp) => sp.op === "send" && members.includes(sp.rank) && members.includes(sp.peer)).length;
      const busy = groups.filter((g) => g.kind === kind && same(g.ranks, members));
      const linked = kind === "pp" ? links.filter((l) => members.includes(l.from) && members.includes(l.to)) : [];
      const calling = busy.length ? busy.map((g) => `${g.c.op}${g.c.label ? ` — ${tText(g.c.label)}` : ""}`)
        : linked.map((l) => `rank ${l.from} → rank ${l.to}`);
      const active = calling.length ? t("yes: {calls}", { calls: calling.join("; ") }) : t("no");
      rows.push([t("{kind} group {index}", { kind: kind.toUpperCase(), index }), members.join(", "), String(calls), active]);
      attrs.push({ "data-kind": kind, "data-members": members.join(","), "data-active": calling.length ? "yes" : "no" });
    });
  }
  const groupTable = grid(t("Process groups: tp = {tp} × pp = {pp} × dp = {dp}; which communicate at this step", topo),
    ["group", "members (ranks)", "calls so far", "active now"], rows, { cache, className: "topology-groups-table", rowAttrs: (r) => attrs[r] });
  const places = grid("Each rank's place: rank = dp·(pp·tp) + stage·tp + tp_rank", ["rank", "replica (dp)", "stage (pp)", "tp rank"],
    (topo.coordinates || []).map(([d, st, tp], r) => [`rank ${r}`, String(d), String(st), String(tp)]), { cache, className: "topology-ranks-table" });
  const sync = state.rankMetrics.get("dp_sync_bytes");
  const syncTable = sync?.size
    ? grid("DP gradient sync per rank", ["rank", "measured", "expected"],
      [...sync].sort((a, b) => a[0] - b[0]).map(([r, list]) => [`rank ${r}`, formatBytes(list.at(-1).value),
        list.at(-1).expected !== undefined ? formatBytes(list.at(-1).expected) : "–"]), { cache, className: "topology-sync-table" })
    : null;
  return [groupTable, places, syncTable];
}

// ---- memory ------------------------------------------------------------------------------------------

const MEMORY_PARTS = [["memory_parameters", "parameters"], ["memory_gradients", "gradients"], ["memory_optimizer_state", "optimizer state"]];

/** Rank × (parameters, gradients, optimizer state): bytes measured and by the formula; the communication per step. */
export function memoryTable(state, { cache } = {}) {
  const latest = (metric, rank) => state.rankMetrics.get(metric)?.get(rank)?.at(-1) || null;
  const ranks = state.ranks.map((rs) => rs.rank).filter((r) => MEMORY_PARTS.some(([m]) => latest(m, r)));
  if (!ranks.length) return null;
  const head = ["rank"];
  for (const [metric, name] of MEMORY_PARTS) {
    const f = parseFormula(latest(metric, ranks[0])?.formula).expr;
    head.push(t("{part} measured", { part: t(name) }), t("{part} formula", { part: t(name) }) + (f ? ` (${f})` : ""));
  }
  head.push("total measured");
  const memory = grid("Memory per rank: bytes measured on the rank, and by the ZeRO formula", head,
    ranks.map((r) => {
      let total = 0;
      const cells = MEMORY_PARTS.flatMap(([metric]) => {
        const e = latest(metric, r);
        if (!e) return ["not yet", "–"];
        total += e.value;
        const ok = e.expected === undefined || Math.abs(e.value - e.expected) <= 1e-9 * Math.max(1, e.expected);
        return [formatBytes(e.value), e.expected === undefined ? "–" : `${formatBytes(e.expected)} ${ok ? "✓" : "✗"}`];
      });
      return [`rank ${r}`, ...cells, formatBytes(total)];
    }), { cache, className: "memory-state-table", rowAttrs: (i) => ({ "data-rank": ranks[i] }) });
  const comm = latest("comm_elements_per_step", ranks[0]);
  const commTable = comm
    ? grid("Communicated per step", ["what", "measured", "expected"],
      [["elements", formatNumber(comm.value), `${formatNumber(comm.expected)} ${comm.value === comm.expected ? "✓" : "✗"}`]],
      { cache, className: "memory-comm-table" })
    : null;
  return [memory, commTable];
}

// ---- numbers ---------------------------------------------------------------------------------------------

const SHOWN_ELSEWHERE = new Set([...COST_METRICS, "block_comm_bytes_expected", "steps_ring",
  "steps_recursive_doubling", ...PIPELINE_METRICS, ...MEMORY_METRICS, ...TOPOLOGY_METRICS]);

/** The metrics the numbers panel shows: name, value, unit, formula, expected, verdict. */
export function numbersTable(state, { cache } = {}) {
  const metrics = [...state.metrics.values()].filter((e) => !SHOWN_ELSEWHERE.has(e.name));
  return grid("Numbers the ranks measured", ["metric", "value", "unit", "formula", "expected", "verdict"],
    metrics.map((e) => [e.name, formatNumber(e.value), e.unit || "", e.formula || "–",
      e.expected === undefined ? "–" : formatNumber(e.expected),
      e.expected === undefined ? "–" : e.value === e.expected ? "✓ as predicted" : "✗ differs"]),
    { cache, className: "numbers-table", rowAttrs: (r) => ({ "data-metric": metrics[r].name }) });
}

// ---- cost model ------------------------------------------------------------------------------------------

/** The sweep so far: size, measured, predicted, ratio, bandwidths; and the fitted α and β. */
export function costTable(state, { cache } = {}) {
  const points = [...(state.series.get("cost_sweep") || [])].sort((a, b) => a.bytes - b.bytes);
  const alpha = state.metrics.get("alpha");
  const beta = state.metrics.get("beta");
  if (!points.length && !alpha) return null;
  const sweep = grid("Cost model sweep: measured time against the α–β prediction", ["size m", "bytes", "measured", "predicted", "ratio", "algbw", "busbw"],
    points.map((pt) => [formatSize(pt.bytes), String(pt.bytes), formatSeconds(pt.value), formatSeconds(pt.predicted),
      pt.predicted > 0 ? `${(pt.value / pt.predicted).toFixed(2)}×` : "–", formatRate(pt.algbw), formatRate(pt.busbw)]),
    { cache, className: "cost-state-table" });
  const fit = alpha || beta
    ? grid("Fitted from ping-pong between ranks 0 and 1", ["parameter", "value"], [
      ...(alpha ? [["α (per message)", formatSeconds(alpha.value)]] : []),
      ...(beta ? [["β (per byte)", beta.value > 0 ? `${(beta.value * 1e9).toPrecision(3)} ns/B` : "0"]] : []),
    ], { cache, className: "cost-fit-table" })
    : null;
  return [sweep, fit];
}

// ---- before → after --------------------------------------------------------------------------------------

/** Each rank's tensor before the collective and after it, and the rank(s) each after-value came from. */
export function originsTable(state, { cache } = {}) {
  let afterName = null;
  for (const [name, byRank] of state.loose) if ([...byRank.values()].some((e) => Array.isArray(e.origin))) afterName = name;
  if (!afterName) return null;
  const beforeName = ["before", "input"].find((n) => state.loose.has(n)) || null;
  const before = beforeName ? state.loose.get(beforeName) : new Map();
  const after = state.loose.get(afterName);
  const ranks = [...new Set([...before.keys(), ...after.keys(), ...state.ranks.map((rs) => rs.rank)])].sort((a, b) => a - b);
  const values = (e) => (e?.tensor?.preview || []).flat().map(cellValue).map(formatNumber).join(" ");
  return grid(t("Before → after: {before} and {after} on each rank", { before: beforeName || "before", after: afterName }),
    ["rank", beforeName || "before", afterName, "each value came from"],
    ranks.map((r) => {
      const a = after.get(r);
      const origins = Array.isArray(a?.origin) ? a.origin.map((o) => rankList([...o].sort((x, y) => x - y)).replace(/, /g, "+")) : [];
      return [`rank ${r}`, before.has(r) ? values(before.get(r)) : "not yet", a ? values(a) : "not yet", origins.join("; ") || "–"];
    }), { cache, className: "origins-table" });
}

/** Picture id → its table, for the panels of the parallelism and collectives lessons. */
export const PARALLEL_TABLES = {
  pipeline: pipelineTable, timeline: timelineTable, topology: topologyTable, memory: memoryTable,
  numbers: numbersTable, cost: costTable, origins: originsTable,
};
