/**
 * Pipeline parallelism: the measured schedule as a Gantt chart (one row per rank, F/B/I/W blocks
 * with their microbatch numbers, recvs and sends, arrows from each send to the recv that took it),
 * the ideal grid of the same schedule from torch's own definitions below it (the same rows; notes
 * where torch's grid was corrected), the bubble fraction measured against the grid and the formula,
 * and the activations each rank holds over time against the bound of its schedule.
 */

import { cacheOf, changed, fill, h, morph, place, remPx, s, setAttributes, sizeOf } from "paralab/dom.js";
import { t, tPlural, tText } from "paralab/i18n.js";
import { formatBytes } from "paralab/replay.js";
import { fitText, formatMs, ganttFrame, ganttSvg, rowLabel, timeAxis, xScale } from "paralab/views/gantt.js";
import { CANVAS_BLOCKS, ganttCanvas } from "paralab/views/gantt-canvas.js";
import { p2pBlock, pairSendRecv, spanExtent } from "paralab/views/timeline.js";

export const KIND_COLOURS = { F: "#2563eb", B: "#16a34a", I: "#9333ea", W: "#d97706" };
const KIND_NAMES = { F: "forward", B: "backward", I: "input gradient (½ of B)", W: "weight gradient (½ of B)" };
const OTHER_COLOUR = "#64748b";
const COLLECTIVE_COLOUR = "#334155";
const OWN_ENGINE = { gpipe: "GPipe", "1f1b": "1F1B" };

/** Pipeline metrics this view shows (the numbers panel leaves them out). */
export const PIPELINE_METRICS = ["bubble_fraction", "bubble_fraction_ideal", "activations_in_flight",
  "peak_activations_in_flight", "peak_activation_bytes"];

/** A colour mixed with white: `f` = 0 the colour, 1 white. */
export function tint(hex, f) {
  const n = parseInt(hex.slice(1), 16);
  const mix = (c) => Math.round(c + (255 - c) * f);
  return `rgb(${mix(n >> 16)}, ${mix((n >> 8) & 255)}, ${mix(n & 255)})`;
}

/** "2F0" → {stage: 2, kind: "F", mb: 0}; "(0F7;7B3)OVERLAP_F_B" → {overlap: [two actions]}; null → null. */
export function parseAction(text) {
  if (text === null || text === undefined) return null;
  const overlap = /^\((.*)\)OVERLAP_F_B$/.exec(text);
  if (overlap) return { overlap: overlap[1].split(";").map(parseAction).filter(Boolean), text };
  const m = /^(\d+)([A-Z_]+?)(\d+)?$/.exec(text);
  return m ? { stage: Number(m[1]), kind: m[2], mb: m[3] === undefined ? null : Number(m[3]), text } : { kind: "?", text };
}

/**
 * The lesson's formula for the bubble, as rank 0's `bubble_fraction_ideal` metric sends it: {text, value}
 * (value null where the schedule has no closed form), or null before it arrived.
 */
export function bubbleFormula(state) {
  const e = state.metrics.get("bubble_fraction_ideal");
  return e?.formula ? { text: e.formula, value: e.expected ?? null } : null;
}

/**
 * The most microbatches' activations `rank` may hold, as its `peak_activations_in_flight` metric sends it
 * (`bound`, and the formula it comes from): {text, value}, or null (not reported yet, or no bound).
 */
export function activationBound(state, rank) {
  const e = state.rankMetrics.get("peak_activations_in_flight")?.get(rank)?.at(-1);
  return e && e.bound !== undefined && e.bound !== null ? { text: e.formula, value: e.bound } : null;
}

/** The straggler the lesson slowed down, as its `schedule` event says: {stage, factor} or null. */
function slowStageOf(state) {
  const stage = state.schedule?.slow_stage;
  return stage === null || stage === undefined ? null : { stage, factor: state.schedule.slow_factor ?? null };
}

function scheduleOf(state, params) {
  return state.schedule?.schedule || params?.schedule || "1f1b";
}

const looks = new Map();      // "kind/chunk" → its colours, worked out once (a grid or a chart asks thousands of times)
function look(kind, chunk) {
  const key = `${kind}/${chunk > 0 ? 1 : 0}`;
  if (!looks.has(key)) {
    const base = KIND_COLOURS[kind] || OTHER_COLOUR;
    looks.set(key, chunk > 0 ? { fill: tint(base, 0.62), stroke: base, ink: "#0f172a" } : { fill: base, stroke: null, ink: "white" });
  }
  return looks.get(key);
}

/** Which of its stages a rank holds this one as: 0 the first, 1 the second (drawn lighter). */
function chunkOf(placement, rank, stage) {
  const mine = placement?.[rank];
  const i = mine ? mine.indexOf(stage) : -1;
  return i > 0 ? i : 0;
}

function stagesText(placement, rank) {
  const mine = placement?.[rank];
  if (!mine) return null;
  return tPlural(mine.length, "stage {stages}", "stages {stages}", { stages: mine.join(", ") });
}

function slowRanks(placement, slow, p) {
  if (!slow) return new Set();
  const slowStage = slow.stage;
  if (placement) return new Set(placement.map((stages, r) => (stages.includes(slowStage) ? r : -1)).filter((r) => r >= 0));
  return new Set(slowStage < p ? [slowStage] : []);
}

// ---- the measured Gantt chart ----------------------------------------------------------------------

// The block of each span that ended, made once: a closed span is never changed, so a step rebuilds only the blocks
// of the spans still open or at the cursor, not thousands; a send's (a tick where it began) is made once from its
// begin: an isend stays open until it is waited for, long after. They are kept by the span's seq (the run's, one at a
// time), not by the span object: a fold from a checkpoint makes its own copy of a span that ends, and the same
// block objects at every place are what lets the painted chart serve a move from a picture it kept (`lasting`).
let closedBlocks = { run: null, bySeq: new Map() };     // span's seq → {placement, block}

/** The blocks kept for `run` (its id; a page's run without one: its log's contents, made anew for each run). */
function closedBlocksOf(run) {
  if (closedBlocks.run !== run) closedBlocks = { run, bySeq: new Map() };
  return closedBlocks.bySeq;
}

function ganttRows(state, { run, placement, slow, slowFactor, extent }) {
  const seq = state.event?.seq;
  const kept = closedBlocksOf(run);
  const keepIf = (lasting, sp, block) => {      // `block`, kept as the span's if it will not change (`lasting`)
    if (lasting) kept.set(sp.seq, { placement, block });
    return block;
  };
  const makespan = extent ? extent.end - extent.start : 0;
  return state.ranks.map((rs) => {
    const compute = [];
    const comm = [];
    let busy = 0;
    for (const sp of rs.spans) {
      const t1 = sp.t1 ?? state.tNow;
      const current = sp.seq === seq || sp.end?.seq === seq;
      const lasting = !current && (sp.t1 !== null || (sp.kind === "p2p" && sp.op === "send"));
      const made = lasting ? kept.get(sp.seq) : undefined;
      const block = made?.placement === placement ? made.block : null;
      if (sp.kind === "compute") {
        busy += t1 - sp.t0;
        compute.push(block ?? keepIf(lasting, sp, computeBlock(sp, rs.rank, t1, current, placement)));
      } else {
        comm.push(block ?? keepIf(lasting, sp, sp.kind === "p2p"
          ? p2pBlock(sp, state, { id: sp.seq, ...(current ? { cls: [sp.op, "current"] } : {}) })
          : { id: sp.seq, t0: sp.t0, t1, fill: COLLECTIVE_COLOUR, text: sp.op.replace(/_/g, "-"), short: "", cls: ["collective", current && "current"],
              get title() { return `rank ${rs.rank}: ${sp.op}${sp.label ? ` — ${tText(sp.label)}` : ""}`; } }));   // in the language asked in
      }
    }
    const share = makespan > 0 ? busy / makespan : null;
    return {
      rank: rs.rank, sub: stagesText(placement, rs.rank), badge: slow.has(rs.rank) ? (slowFactor ? t("slow ×{factor}", { factor: slowFactor }) : t("slow")) : null,
      cls: slow.has(rs.rank) && "slow",
      lanes: [{ height: 1.7, cls: "compute-lane", blocks: compute }, { height: 0.75, cls: "comm-lane", blocks: comm }],
      right: share === null ? "" : t("busy {percent}%", { percent: Math.round(100 * Math.min(1, share)) }),
      rightTitle: "time this rank computed, as a share of the pipeline's makespan so far", busy,
    };
  });
}

/** A compute span's block: its kind's colour (lighter on a rank's second stage), its microbatch on it. */
function computeBlock(sp, rank, t1, current, placement) {
  const stage = sp.begin?.stage;
  const mb = sp.begin?.microbatch;
  const chunk = chunkOf(placement, rank, stage);
  const colours = look(sp.name, chunk);
  return { id: sp.seq, t0: sp.t0, t1, ...colours, text: mb ?? "", cls: ["compute", sp.name, chunk > 0 && "second-chunk", sp.t1 === null && "open", current && "current"],
           data: { "data-kind": sp.name, "data-mb": mb, "data-stage": stage },
           get title() {      // written when asked for: a big run's canvas asks only on hover
             return t("rank {rank} · stage {stage} · {name} of microbatch {mb}", { rank, stage, name: sp.name, mb })
               + (sp.t1 === null ? ` ${t("(running)")}` : ` · ${formatMs(sp.t1 - sp.t0)}`);
           } };
}

// ---- the ideal grid ------------------------------------------------------------------------------------

/** The key an action's progress is kept under: "2F0" (stage, kind, microbatch). */
const actionKeys = new WeakMap();        // parsed action, or a compute span's begin event → its key, made once
function actionKey(a) {
  let key = actionKeys.get(a);
  if (key === undefined) actionKeys.set(a, (key = `${a.stage}${a.kind}${a.mb}`));
  return key;
}

function spanKey(sp) {
  let key = actionKeys.get(sp.begin);
  if (key === undefined) actionKeys.set(sp.begin, (key = `${sp.begin.stage}${sp.name}${sp.begin.microbatch}`));
  return key;
}

/** What each ideal action has become at the cursor: "2F0" → "done" or "running" (absent: not yet). */
function progressOf(state) {
  const progress = new Map();
  for (const rs of state.ranks) {
    for (const sp of rs.spans) {
      if (sp.kind !== "compute" || sp.begin?.stage === undefined) continue;
      progress.set(spanKey(sp), sp.t1 === null ? "running" : "done");
    }
  }
  return progress;
}

/** The grid of the ideal schedule, without progress (see `showProgress`): it changes only with the size. */
function idealGridSvg(schedule, frame, { slow }) {
  const rem = frame.rem;
  const grid = schedule.grid || [];
  const cols = Math.max(1, ...grid.map((row) => row.length));
  const cw = frame.plot / cols;
  const ch = 1.7 * rem;
  const gap = 1.3 * rem;
  const top = 0.3 * rem;
  const height = top + grid.length * (ch + gap) + 2.2 * rem;
  const svg = s("svg", { class: "gantt ideal-grid", viewBox: `0 0 ${frame.width} ${height}`, width: frame.width, height, role: "img",
                         "aria-label": t("the ideal {schedule} grid: {ranks} ranks × {cols} slots", { schedule: schedule.schedule, ranks: grid.length, cols }), style: `font-size: ${0.78 * rem}px` });
  const charPx = 0.84 * rem * 0.62;
  grid.forEach((row, r) => {
    const y = top + r * (ch + gap);
    const g = s("g", { class: ["gantt-row", "ideal-row", slow.has(r) && "slow"], "data-rank": r });
    g.append(s("rect", { x: frame.left, y, width: frame.plot, height: ch, class: "gantt-row-bg" }));
    const placement = schedule.placement;
    g.append(rowLabel({ rank: r, sub: stagesText(placement, r) }, y, ch, frame, { chip: false }));
    let busy = 0;
    row.forEach((cell, c) => {
      const action = parseAction(cell);
      const x = frame.left + c * cw;
      if (!action) {
        g.append(s("rect", { x: x + 0.5, y, width: cw - 1, height: ch, class: "ideal-idle" }));
        return;
      }
      busy += 1;
      const parts = action.overlap || [action];
      const ph = ch / parts.length;
      const cell_ = s("g", { class: ["ideal-cell", action.overlap && "overlap"], "data-action": cell });
      parts.forEach((a, k) => {
        const colours = look(a.kind, chunkOf(placement, r, a.stage));
        cell_.append(s("rect", { x: x + 0.5, y: y + k * ph, width: cw - 1, height: ph, fill: colours.fill, stroke: colours.stroke || "none", "stroke-width": colours.stroke ? 1.2 : 0 }));
        const text = fitText({ text: parts.length > 1 ? `${a.kind}${a.mb}` : a.mb, short: a.mb }, cw, charPx * (parts.length > 1 ? 0.8 : 1));
        if (text) {
          cell_.append(s("text", { x: x + cw / 2, y: y + k * ph + ph / 2, "text-anchor": "middle", "dominant-baseline": "central",
                                   class: ["gantt-text", parts.length > 1 && "small"], fill: colours.ink }, text));
        }
      });
      cell_.append(s("title", {}, t("slot {slot}: {action}", { slot: c, action: slotAction(action) })));
      g.append(cell_);
    });
    g.append(s("text", { x: frame.right + 0.5 * rem, y: y + ch / 2, "dominant-baseline": "central", class: "gantt-right" }, t("busy {percent}%", { percent: Math.round((100 * busy) / cols) })));
    svg.append(g);
  });
  const bottom = top + grid.length * (ch + gap) - gap;
  const every = cols > 40 ? 10 : 5;
  for (let c = 0; c <= cols; c += every) {
    const x = frame.left + c * cw;
    svg.append(s("line", { x1: x, x2: x, y1: top, y2: bottom + 0.3 * rem, class: "gantt-grid" }),
      s("text", { x, y: bottom + 1.0 * rem, "text-anchor": c === 0 ? "start" : "middle", class: "gantt-tick" }, String(c)));
  }
  svg.append(s("text", { x: frame.left + frame.plot / 2, y: bottom + 2.0 * rem, "text-anchor": "middle", class: "gantt-axis-label" },
    "slots of the ideal schedule: every action one unit of time"));
  return svg;
}

/** An ideal action's state at the cursor: "done", "running" (outlined) or "todo" (faded). */
function cellState(action, progress) {
  if (!action.overlap) return progress.get(actionKey(action)) || "todo";
  const states = action.overlap.map((a) => progress.get(actionKey(a)) || "todo");
  return states.includes("running") ? "running" : states.every((st) => st === "done") ? "done" : states.includes("done") ? "running" : "todo";
}

// ---- the ideal grid of a big run: painted (gantt-canvas.js), its slots as the time axis ----------------

const parsedGrids = new WeakMap();   // schedule event → its grid's cells parsed, once
function parsedGrid(schedule) {
  if (!parsedGrids.has(schedule)) parsedGrids.set(schedule, (schedule.grid || []).map((row) => row.map(parseAction)));
  return parsedGrids.get(schedule);
}

/** Whether the grid is big enough to be painted rather than drawn as SVG (a node or three per cell). */
function paintsGrid(schedule) {
  return (schedule.grid || []).reduce((n, row) => n + row.length, 0) > CANVAS_BLOCKS;
}

/** The grid as a Gantt chart's rows: a block per slot, faded where the ranks have not run it at the cursor,
 *  outlined where they run it. Each cell's block for each of the three is made once per grid (and language) and never
 *  changed, so the painted grid keeps a picture and repaints only the cells whose progress changed (`lasting`). */
const idealBlocks = new WeakMap();   // schedule event → {lang, rows: [[{action, looks: {todo, running, done}, make}]]}
function idealRows(schedule, progress, slow) {
  const placement = schedule.placement;
  const grid = parsedGrid(schedule);
  const cols = Math.max(1, ...grid.map((row) => row.length));
  const lang = document.documentElement.lang;
  if (idealBlocks.get(schedule)?.lang !== lang) {
    idealBlocks.set(schedule, { lang, rows: grid.map((row, r) => row.flatMap((action, c) => {
      if (!action) return [];
      const parts = action.overlap || [action];
      const colours = look(parts[0].kind, chunkOf(placement, r, parts[0].stage));
      const make = (state) => ({ t0: c, t1: c + 1, ...colours, text: parts.length > 1 ? parts.map((a) => `${a.kind}${a.mb}`).join("+") : parts[0].mb,
                                 short: parts[0].mb, faded: state === "todo", cls: state === "running" ? "current" : null,
                                 get title() { return t("slot {slot}: {action}", { slot: c, action: slotAction(action) }); } });
      return [{ action, looks: {}, make }];
    })) });
  }
  return idealBlocks.get(schedule).rows.map((cells, r) => {
    const blocks = cells.map((cell) => {
      const state = cellState(cell.action, progress);
      return (cell.looks[state] ??= cell.make(state));
    });
    return { rank: r, sub: stagesText(placement, r), badge: slow.has(r) ? t("slow") : null, lanes: [{ height: 1.7, blocks }],
             right: t("busy {percent}%", { percent: Math.round((100 * blocks.length) / cols) }) };
  });
}

/** The painted grid in `canvas`, repainted only when what the ranks have run changed. */
function paintIdealGrid(canvas, schedule, frame, slow, progress) {
  const running = [...progress].filter(([, st]) => st === "running").map(([key]) => key);
  const drawn = [frame.width, frame.rem, progress.size, ...running].join(",");
  if (canvas.drawnProgress === drawn) return canvas;
  canvas.drawnProgress = drawn;
  const cols = Math.max(1, ...(schedule.grid || []).map((row) => row.length));
  return ganttCanvas(canvas, { rows: idealRows(schedule, progress, slow), lasting: true, axis: { start: 0, end: cols, step: cols > 40 ? 10 : 5 }, frame,
    axisLabel: "slots of the ideal schedule: every action one unit of time", className: "ideal-grid", gap: 1.3,
    ariaLabel: t("the ideal {schedule} grid: {ranks} ranks × {cols} slots", { schedule: schedule.schedule, ranks: schedule.grid.length, cols }),
    tickText: (slot) => (Math.abs(slot - Math.round(slot)) < 1e-6 ? String(Math.round(slot)) : "") });
}

/** Each cell of the ideal grid as done, running (outlined) or todo (faded) at the cursor. The cells and
 *  what each shows are kept beside the drawing: a step reads no DOM and writes only the cells it changes. */
function showProgress(section, progress) {
  section.cells ??= [...section.querySelectorAll(".ideal-cell")].map((node) => ({ node, action: parseAction(node.dataset.action), shown: null }));
  for (const cell of section.cells) {
    const { action } = cell;
    const state = cellState(action, progress);
    if (cell.shown === state) continue;
    cell.shown = state;
    cell.node.setAttribute("class", ["ideal-cell", action.overlap && "overlap", state].filter(Boolean).join(" "));
  }
  return section;
}

// ---- the bubble --------------------------------------------------------------------------------------

/** What one cell of the ideal grid does: "stage 1 forward of microbatch 3", or the actions overlapped in it. */
function slotAction(action) {
  if (action.overlap) return action.overlap.map((a) => `stage ${a.stage} ${a.kind}${a.mb}`).join(t(" overlapped with "));
  return t("stage {stage} {kind} of microbatch {mb}", { ...action, kind: t(KIND_NAMES[action.kind] || action.kind) });
}

/** Whether the run counts its activations in flight (paralab's pipeline engine does; 3D's does not):
 * else the panel draws no zeros for them. `contents` is the whole log, so scrubbing never hides them. */
function countsActivations(contents) {
  return !contents || ["activations_in_flight", "peak_activations_in_flight"].some((name) => contents.metrics.has(name));
}

function bubbleMeter(state, { p, m, v, liveBubble, slowStage, contents }) {
  const measured = state.metrics.get("bubble_fraction");
  const ideal = state.metrics.get("bubble_fraction_ideal");
  const idealValue = ideal?.value ?? state.schedule?.bubble_fraction;
  const formula = bubbleFormula(state);
  // a whole log without the ranks' own numbers: what the blocks say is all there will be
  const reportsNone = contents?.ended && !contents.metrics.has("bubble_fraction");
  const hasIdeal = idealValue !== undefined || !contents || contents.kinds.has("schedule") || contents.metrics.has("bubble_fraction_ideal");
  const row = (cls, label, value, how, pending) => h("div", { class: ["bubble-row", cls, pending && "pending"] },
    h("span", { class: "bubble-label" }, label),
    h("span", { class: "bubble-bar", "aria-hidden": "true" }, h("span", { style: { width: `${Math.max(0, Math.min(1, value ?? 0)) * 100}%` } })),
    h("strong", { class: "value" }, value === null || value === undefined ? "…" : value.toFixed(3)),
    h("span", { class: "bubble-how" }, how));
  const rows = [
    measured
      ? row("measured", "measured", measured.value, "idle ÷ (ranks × makespan), timed by the ranks")
      : reportsNone
        ? row("measured", "from the blocks", liveBubble, "idle ÷ (ranks × makespan) of the blocks drawn: this program reports no bubble of its own")
        : row("measured", liveBubble === null ? "measured" : "so far", liveBubble, liveBubble === null ? "arrives at the end of the run" : "from the blocks drawn so far; the ranks report the final number at the end", true),
    hasIdeal ? row("ideal", "ideal grid", idealValue ?? null, "idle slots of the grid below") : null,
  ];
  const gap = measured && idealValue !== undefined ? measured.value - idealValue : null;
  return h("div", { class: "bubble-meter" },
    h("h3", {}, "Bubble fraction ", h("span", { class: "panel-note" }, "the share of rank-time spent idle")),
    rows,
    formula
      ? h("p", { class: "bubble-formula" }, h("span", { class: "label" }, "formula: "),
          formula.value === null ? formula.text : h("code", {}, formula.text),            // words where there is no closed form
          formula.value !== null ? [" = ", h("strong", {}, formula.value.toFixed(3)),
            h("span", { class: "bubble-symbols" }, ` ${t(formula.text.includes("v") ? "with p = {p} ranks, m = {m} microbatches, v = {v} stages per rank"
              : "with p = {p} ranks, m = {m} microbatches", { p, m, v })}`)] : null)
      : null,
    gap !== null
      ? h("p", { class: "bubble-gap" }, gap > 0.02
        ? t("Measured is {gap} above the grid: the grid counts every action as one slot and nothing else, while the ranks also spend time in send/recv{slow}.", {
          gap: gap.toFixed(3),
          slow: !slowStage?.factor ? ""
            : t(" — and stage {stage} is {factor}× slower, so every other rank waits for it", slowStage) })
        : "Measured matches the grid within 0.02.")
      : null);
}

// ---- activations in flight -------------------------------------------------------------------------

// A rank's activations as a path of steps up to its latest report, kept until it reports again (or the chart's
// scale changes): a move writes only the path's last stretch, to the cursor's time, not hundreds of steps again.
const activationPaths = new WeakMap();     // the rank's reports (a list that only grows; a fold's copy is another) → {key, …}
function activationSteps(points, X, Y, frame, axis) {
  const key = [points.length, X(axis.start), X(axis.end), Y(0), Y(1), frame.left, frame.right].join(",");
  const kept = activationPaths.get(points);
  if (kept?.key === key) return kept;
  let d = `M${X(axis.start).toFixed(1)},${Y(0).toFixed(1)}`;
  let level = 0;
  let peak = 0;
  let peakB = 0;
  for (const e of points) {
    const x = Math.max(frame.left, Math.min(frame.right, X(e.t))).toFixed(1);
    d += ` H${x} V${Y(e.value).toFixed(1)}`;
    level = e.value;
    peak = Math.max(peak, e.value);
    peakB = Math.max(peakB, e.bytes || 0);
  }
  const made = { key, d, level, peak, peakB };
  activationPaths.set(points, made);
  return made;
}

/** The `cls` path kept in `cache` under `name`, its `d` written only when it changed. */
function pathOf(cache, name, cls, d) {
  const path = cache.get(`path ${name}`, () => s("path", { class: cls }));
  if (path.getAttribute("d") !== d) path.setAttribute("d", d);
  return path;
}

function activationsSvg(state, frame, axis, { slow }, cache) {
  const rem = frame.rem;
  const X = xScale(frame, axis);
  const leaf = (tag, attrs, text) => cache.get(tag + JSON.stringify(attrs) + (text ?? ""), () => s(tag, attrs, text));
  const series = state.rankMetrics.get("activations_in_flight") || new Map();
  const peaks = state.rankMetrics.get("peak_activations_in_flight") || new Map();
  const peakBytes = state.rankMetrics.get("peak_activation_bytes") || new Map();
  let top = 1;
  for (const rs of state.ranks) {
    const b = activationBound(state, rs.rank);
    if (b) top = Math.max(top, b.value);
    for (const e of series.get(rs.rank) || []) top = Math.max(top, e.value);
  }
  const rowH = 2.6 * rem;
  const gap = 0.5 * rem;
  const y0 = 0.4 * rem;
  const height = y0 + state.ranks.length * (rowH + gap) + 1.9 * rem;
  const svg = setAttributes(cache.get("svg", () => s("svg", {})), { class: "gantt activations-chart", viewBox: `0 0 ${frame.width} ${height}`,
    width: frame.width, height, role: "img", "aria-label": "activations in flight on each rank over time", style: `font-size: ${0.78 * rem}px` });
  const parts = state.ranks.map((rs, i) => {
    const y = y0 + i * (rowH + gap);
    const Y = (v) => y + rowH - (v / top) * rowH;
    const rowCls = ["gantt-row", "activation-row", slow.has(rs.rank) && "slow"];
    const g = cache.get(`row${JSON.stringify([rs.rank, rowCls])}`, () => s("g", { class: rowCls, "data-rank": rs.rank }));
    const rowParts = [leaf("rect", { x: frame.left, y, width: frame.plot, height: rowH, class: "gantt-row-bg" }),
      leaf("text", { x: 0.3 * rem, y: y + rowH / 2, "dominant-baseline": "central", class: "act-rank" }, `rank ${rs.rank}`)];
    for (const v of [0, top]) {
      rowParts.push(leaf("text", { x: frame.left - 0.35 * rem, y: Y(v), "text-anchor": "end", "dominant-baseline": "central", class: "gantt-tick" }, String(v)));
    }
    const { d: steps, level, peak, peakB } = activationSteps(series.get(rs.rank) || [], X, Y, frame, axis);
    const d = `${steps} H${X(Math.min(axis.end, state.tNow)).toFixed(1)}`;
    rowParts.push(pathOf(cache, `area ${rs.rank}`, "act-area", `${d} V${Y(0).toFixed(1)} Z`), pathOf(cache, `line ${rs.rank}`, "act-line", d));
    const bound = activationBound(state, rs.rank);
    if (bound) {
      const nearTop = Y(bound.value) - y < 0.9 * rem;
      rowParts.push(leaf("line", { x1: frame.left, x2: frame.right, y1: Y(bound.value), y2: Y(bound.value), class: "act-bound" }),
        leaf("text", { x: frame.left + 0.3 * rem, y: Y(bound.value) + (nearTop ? 0.75 : -0.35) * rem, class: "act-bound-label" }, t("bound {bound} = {value}", { bound: bound.text, value: bound.value })));
    }
    const reported = peaks.get(rs.rank)?.at(-1)?.value;
    const reportedBytes = peakBytes.get(rs.rank)?.at(-1)?.value;
    const shownPeak = reported ?? peak;
    const over = bound && shownPeak > bound.value;
    const peakAttrs = { x: frame.right + 0.5 * rem, y: y + rowH / 2 - 0.5 * rem, "dominant-baseline": "central", class: ["gantt-right", "act-peak", over && "over"] };
    const peakText = t("peak {peak}", { peak: shownPeak }) + (bound ? (over ? " ✗" : " ✓") : "");
    const peakTitle = bound ? t("peak {peak}, bound {bound} = {value}", { peak: shownPeak, bound: bound.text, value: bound.value }) : t("peak {peak}", { peak: shownPeak });
    rowParts.push(cache.get(`peak${JSON.stringify([peakAttrs, peakText, peakTitle])}`, () => s("text", peakAttrs, peakText, s("title", {}, peakTitle))));
    rowParts.push(leaf("text", { x: frame.right + 0.5 * rem, y: y + rowH / 2 + 0.55 * rem, "dominant-baseline": "central", class: "gantt-right act-bytes" },
      formatBytes(reportedBytes ?? peakB)));
    const held = tPlural(level, "rank {rank}: {n} microbatch of activations held now; peak {peak}",
      "rank {rank}: {n} microbatches of activations held now; peak {peak}", { rank: rs.rank, peak: shownPeak });
    rowParts.push(leaf("title", {}, held + (bound ? ` ${t("(bound {bound} = {value})", { bound: bound.text, value: bound.value })}` : "")));
    return place(g, rowParts);
  });
  const bottom = y0 + state.ranks.length * (rowH + gap) - gap;
  for (let tick = axis.start, i = 0; tick <= axis.end + 1e-9; tick += axis.step, i++) {
    parts.push(leaf("text", { x: X(tick), y: bottom + 1.0 * rem, "text-anchor": i === 0 ? "start" : "middle", class: "gantt-tick" }, formatMs(tick - axis.start)));
  }
  const e = state.event;
  if (e && e.t >= axis.start && e.t <= axis.end) parts.push(leaf("line", { x1: X(e.t), x2: X(e.t), y1: y0, y2: bottom, class: "gantt-now" }));
  cache.done();
  return place(svg, parts);
}

// ---- the panel -------------------------------------------------------------------------------------------

function describeSchedule(schedule, p, m, v, params, slowStage) {
  const who = OWN_ENGINE[schedule] ? t("{schedule}, paralab's own engine (engine.py)", { schedule: OWN_ENGINE[schedule] })
    : t("torch.distributed.pipelining's Schedule{schedule}", { schedule: schedule.replace(/^Schedule/, "") });
  const bits = [t("p = {p} ranks", { p }), t("m = {m} microbatches", { m })];
  if (v > 1) bits.push(t("v = {v} stages per rank", { v }));
  if (params?.delay_ms !== undefined) bits.push(t("F {f} ms, B {b} ms of added compute", { f: params.delay_ms, b: 2 * params.delay_ms }));
  if (slowStage?.factor) bits.push(t("stage {stage} {factor}× slower", slowStage));
  return h("p", { class: "pipeline-head" }, h("strong", {}, who), ` · ${bits.join(" · ")}`);
}

function kindLegend(kinds, v, anyP2p) {
  return h("div", { class: "gantt-legend" },
    ["F", "B", "I", "W"].filter((k) => kinds.has(k)).map((k) => h("span", { class: "key" },
      h("span", { class: "swatch", style: { background: KIND_COLOURS[k] } }), h("strong", {}, k), ` ${KIND_NAMES[k]}`)),
    v > 1 ? h("span", { class: "key" }, h("span", { class: "swatch", style: { background: tint(KIND_COLOURS.F, 0.62), borderColor: KIND_COLOURS.F } }), "lighter: a rank's second stage") : null,
    anyP2p ? [h("span", { class: "key" }, h("span", { class: "swatch", style: { background: "#cbd5e1" } }), "recv (waiting)"),
      h("span", { class: "key" }, h("span", { class: "arrow-key", "aria-hidden": "true" }, "▼"), "send"),
      h("span", { class: "key" }, h("span", { class: "arrow-key", "aria-hidden": "true" }, "↘"), "from a send to the recv that took it")] : null,
    h("span", { class: "key" }, h("span", { class: "swatch idle" }), "idle: the bubble"),
    h("span", { class: "key note" }, "numbers on the blocks: microbatches"));
}

/** Draw the pipeline panel; returns false when the run has nothing pipeline-like to show. */
/** ctx.contents: what the whole log holds (a run with no `schedule` event has no ideal grid to wait for). */
export function renderPipeline(container, state, { runId, params, contents }) {
  const hasCompute = state.ranks.some((rs) => rs.spans.some((sp) => sp.kind === "compute"));
  if (!state.schedule && !hasCompute) {
    changed(container, "none");
    fill(container, h("p", { class: "empty" }, "The Gantt chart of the schedule fills in here as the stages run."));
    return true;
  }
  const rem = remPx();
  const width = Math.max(560, sizeOf(container).width || 1000);
  const key = [runId, state.index, width, rem].join(",");
  if (!changed(container, key)) return true;

  const schedule = scheduleOf(state, params);
  const p = Number.isInteger(params?.pp) ? params.pp : state.ranks.length;   // stages: 3D's pp, else every rank
  const m = params?.microbatches ?? 0;
  const v = params?.virtual_stages ?? 1;
  const placement = state.schedule?.placement || null;
  const slowStage = slowStageOf(state);
  const slow = slowRanks(placement, slowStage, p);
  const frame = ganttFrame({ width, rem });
  const cache = cacheOf(container);
  const keep = (parts, make) => cache.get(JSON.stringify(parts), make);
  const kinds = actionKinds(state);
  const anyP2p = state.p2p.length > 0;
  const measured = measuredChart(container, state, { runId, run: runId ?? contents, contents, placement, slow, slowFactor: slowStage?.factor, frame, p });
  place(container, [
    keep(["head", schedule, p, m, v, params, slowStage], () => describeSchedule(schedule, p, m, v, params, slowStage)),
    keep(["legend", [...kinds].sort(), v, anyP2p], () => kindLegend(kinds, v, anyP2p)),
    ...(measured
      ? [keep(["measured"], () => h("h3", { class: "chart-title" }, "Measured ", h("span", { class: "panel-note" }, "each rank's stage actions as they ran; rows grow as events arrive"))),
         place(keep(["measured-wrap"], () => h("div", { class: "gantt-wrap" })), [measured.svg])]
      : [keep(["no-compute"], () => h("p", { class: "empty" }, "No stage has computed yet at this step."))]),
    state.schedule
      ? (paintsGrid(state.schedule)
        ? paintedIdeal(keep(["ideal-painted", runId, state.schedule.seq], () => idealSection(state.schedule, schedule, frame, slow, { painted: true })),
          state.schedule, frame, slow, progressOf(state))
        : showProgress(keep(["ideal", runId, state.schedule.seq, width, rem, [...slow]], () => idealSection(state.schedule, schedule, frame, slow)), progressOf(state)))
      : contents?.kinds.has("schedule")
        ? keep(["no-ideal"], () => h("p", { class: "empty" }, "The ideal grid arrives with rank 0's schedule event."))
        : null,
    morph(keep(["numbers"], () => h("div", { class: "pipeline-numbers" })),
      bubbleMeter(state, { p, m, v, liveBubble: measured?.liveBubble ?? null, slowStage, contents }),
      countsActivations(contents) ? peakTable(state) : null),
    measured && countsActivations(contents) ? activationsSection(keep(["activations"], activationsFrame),
      activationsSvg(state, frame, measured.axis, { slow }, cacheOf(container, "activations"))) : null,
  ].filter(Boolean));
  cache.done();
  return true;
}

/** F, B, I, W: the kinds of action the ranks ran and the ideal grid holds. */
function actionKinds(state) {
  const kinds = new Set(state.schedule ? gridKinds(state.schedule) : []);
  for (const rs of state.ranks) for (const sp of rs.spans) if (sp.kind === "compute") kinds.add(sp.name);
  return kinds;
}

const gridKindsOf = new WeakMap();   // schedule event → the kinds of action its grid holds, read once
function gridKinds(schedule) {
  if (!gridKindsOf.has(schedule)) {
    const kinds = new Set();
    for (const row of parsedGrid(schedule)) for (const a of row) for (const part of a?.overlap || (a ? [a] : [])) kinds.add(part.kind);
    gridKindsOf.set(schedule, kinds);
  }
  return gridKindsOf.get(schedule);
}

/** The measured Gantt chart ({svg, axis, liveBubble}), or null before any stage computed. */
function measuredChart(container, state, { runId, run, contents, placement, slow, slowFactor, frame, p }) {
  const computeExtent = spanExtent(state, (sp) => sp.kind === "compute");
  if (!computeExtent) return null;
  const axis = measuredAxis(state, computeExtent, contents);
  const rows = ganttRows(state, { run, placement, slow, slowFactor, extent: computeExtent });
  const liveBubble = p > 0 ? 1 - rows.reduce((a, r) => a + r.busy, 0) / (p * (computeExtent.end - computeExtent.start)) : null;
  const arrows = arrowsOf(state, runId, run);
  const svg = ganttSvg({ rows, arrows, lasting: true, axis, frame, now: state.event?.t ?? null, className: "pipeline-gantt",
    axisLabel: "time since the first stage action (ms)", ariaLabel: t("pipeline Gantt chart of {p} ranks", { p }), gap: 0.7,
    cache: cacheOf(container, "gantt") });
  return { svg, axis, liveBubble };
}

/**
 * The measured chart's time axis: a finished run's is the whole run's at every place (its log says where its spans
 * lie: log-contents.js), so a move keeps the chart's scale and the painted chart serves it from the picture it kept
 * of the run's end; a run still going grows its axis with the cursor. A margin of 1% before the first action, of the
 * axis rounded to half ticks: a growing axis stays put from one step to the next, and so do the blocks drawn.
 */
function measuredAxis(state, computeExtent, contents) {
  const whole = contents?.ended ? contents.spanTimes : null;
  const start = whole?.computeStart ?? computeExtent.start;
  const end = whole ? whole.end : Math.max(spanExtent(state).end, computeExtent.end);
  const rough = timeAxis(start, end);
  return timeAxis(start - 0.01 * (rough.end - start), end);
}

// Each send's arrow to the recv that took it. The pairs are kept for the latest few states by the run and
// the last event that began or ended a send/recv (`state.p2pSeq`: until the next one they are the same),
// and the arrow of a pair not at the cursor is made once: a step over a compute event pairs nothing again.
const pairings = new Map();          // "runId|p2pSeq" → [{send, recv}]
const KEPT_PAIRINGS = 4;
let arrowOfPair = { run: null, byRecv: new Map() };   // recv's seq → its arrow (not at the cursor), the run's

/** The arrows of the sends paired at `state` (one not at the cursor kept, like the blocks, by its recv's seq). */
function arrowsOf(state, runId, run) {
  const key = `${runId}|${state.p2pSeq}`;
  let pairs = pairings.get(key);
  if (!pairs) {
    pairs = pairSendRecv(state.p2p);
    pairings.set(key, pairs);
    if (pairings.size > KEPT_PAIRINGS) pairings.delete(pairings.keys().next().value);
  }
  if (arrowOfPair.run !== run) arrowOfPair = { run, byRecv: new Map() };
  const kept = arrowOfPair.byRecv;
  const seq = state.event?.seq;
  return pairs.map(({ send, recv }) => {
    const current = send.seq === seq || recv.end?.seq === seq || recv.seq === seq;
    if (current) return pairArrow(send, recv, ["current"]);
    let arrow = kept.get(recv.seq);
    if (arrow?.send.seq !== send.seq) kept.set(recv.seq, (arrow = pairArrow(send, recv, [])));
    return arrow;
  });
}

function pairArrow(send, recv, cls) {
  return { send, from: { row: send.rank, t: send.t0 }, to: { row: recv.rank, t: recv.t1 }, cls,
           get title() { return `rank ${send.rank} → rank ${recv.rank}${send.label ? `: ${send.label.replace(/^send /, "")}` : ""}`; } };
}

function activationsFrame() {
  return h("div", { class: "activations" },
    h("h3", { class: "chart-title" }, "Activations in flight ", h("span", { class: "panel-note" },
      "microbatches whose activations each rank keeps for its backward; same time axis as the chart above")),
    h("div", { class: "gantt-wrap" }));
}

function activationsSection(section, svg) {
  place(section.querySelector(".gantt-wrap"), [svg]);
  return section;
}

/** The ideal grid with its title and notes (progress is marked on it at each step by `showProgress`, or
 *  `paintedIdeal` where the grid is painted: `painted`, an empty canvas to paint). */
function idealSection(scheduleEvent, schedule, frame, slow, { painted = false } = {}) {
  const notes = scheduleEvent.notes || [];
  return h("div", { class: "ideal" },
    h("h3", { class: "chart-title" }, "Ideal ", h("span", { class: "panel-note" },
      OWN_ENGINE[schedule] ? "the order paralab's engine runs, each action one slot, as early as its inputs allow"
        : t("torch's own order of actions for Schedule{schedule}, each one slot, as early as its inputs allow", { schedule }))),
    h("div", { class: "gantt-wrap" }, painted ? h("canvas", {}) : idealGridSvg(scheduleEvent, frame, { slow })),
    h("p", { class: "ideal-progress" }, "Faded: actions the ranks have not run yet at this step; outlined: running now."),
    notes.length
      ? h("div", { class: "grid-notes", role: "note" },
          h("strong", {}, "⚠ torch's grid is wrong here — corrected: "),
          h("ul", {}, notes.map((n) => h("li", {}, n))),
          h("p", {}, "The grid above is the corrected one: the order the ranks actually ran."))
      : null);
}

/** The painted ideal grid's section with the grid repainted for the cursor (and the panel's width). */
function paintedIdeal(section, scheduleEvent, frame, slow, progress) {
  paintIdealGrid(section.querySelector("canvas"), scheduleEvent, frame, slow, progress);
  return section;
}

function peakTable(state) {
  const peaks = state.rankMetrics.get("peak_activations_in_flight") || new Map();
  const bytes = state.rankMetrics.get("peak_activation_bytes") || new Map();
  const series = state.rankMetrics.get("activations_in_flight") || new Map();
  const rows = state.ranks.map((rs) => {
    const b = activationBound(state, rs.rank);
    const reported = peaks.get(rs.rank)?.at(-1)?.value;
    const sofar = Math.max(0, ...(series.get(rs.rank) || []).map((e) => e.value));
    const peak = reported ?? sofar;
    const pb = bytes.get(rs.rank)?.at(-1)?.value ?? Math.max(0, ...(series.get(rs.rank) || []).map((e) => e.bytes || 0));
    return h("tr", { "data-rank": rs.rank, class: b && peak > b.value ? "over" : null },
      h("th", { scope: "row" }, `rank ${rs.rank}`),
      h("td", { class: "num" }, String(peak), reported === undefined ? h("span", { class: "pending" }, " so far") : null),
      h("td", { class: "num" }, b ? `${b.value}` : "–"),
      h("td", { class: "num" }, formatBytes(pb)));
  });
  const bound = activationBound(state, 0);
  return h("div", { class: "peak-table" },
    h("h3", {}, "Peak activations ", h("span", { class: "panel-note" }, "per rank")),
    h("table", { class: "peaks" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "rank")), h("th", { class: "num" }, "peak"), h("th", { class: "num" }, bound ? t("bound {bound}", { bound: bound.text }) : t("bound")), h("th", { class: "num" }, "bytes"))),
      h("tbody", {}, rows)));
}

