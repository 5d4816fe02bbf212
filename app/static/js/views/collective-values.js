/**
 * A small collective drawn with its numbers: each rank's input as a row of cells on the left, its
 * output on the right, and every element travelling from its source slot to its destination slot —
 * in all-to-all, chunk j of rank i lands in rank j's slot i; in all-gather, rank i's chunk lands in
 * slot i of every rank; in a reduction, the members' elements meet in the destination cell, which
 * then shows the sum. No hub: what moves is what the ranks really exchanged, read from the inputs and
 * outputs the log holds (a cell's value is the preview's, exact for tensors this small).
 *
 * Used when every tensor is small enough to read from the back of a hall; otherwise the collective
 * panel draws its heatmap blocks (collective.js).
 */

import { s } from "paralab/dom.js";
import { t } from "paralab/i18n.js";
import { rankColour, SUM_COLOUR } from "paralab/palette.js";
import { cellValue } from "paralab/views/heatmap.js";

const MOST_CELLS = 16;          // per rank and side: more and the numbers stop being readable
const MOST_TOKENS = 96;         // moving numbers at once; above, only the paths are drawn
const CYCLE_S = 2.6;
const REDUCING = new Set(["all_reduce", "reduce", "reduce_scatter"]);

/** The numbers an event holds: its tensor's, or a list's (scatter_list, gather_list) end to end. */
function valuesOf(event) {
  const tensors = event?.tensors || [];
  if (!tensors.length || tensors.some((t) => t.exact === false || !Array.isArray(t.preview))) return null;
  return tensors.flatMap((t) => t.preview.flat().map(cellValue));
}

/** Where output element `k` of rank `dest` comes from: [[source rank, input index], …], by the op's
 *  meaning, with `m` the per-rank chunk length (equal chunks; n members in rank order). */
function sourcesOf(op, members, root, dest, k, m) {
  const slot = Math.floor(k / m);
  switch (op) {
    case "all_reduce": return members.map((r) => [r, k]);
    case "reduce": return dest === root ? members.map((r) => [r, k]) : null;
    case "broadcast": return [[root, k]];
    case "all_gather": return [[members[slot], k % m]];
    case "gather": return dest === root ? [[members[slot], k % m]] : null;
    case "reduce_scatter": return members.map((r) => [r, members.indexOf(dest) * m + k]);
    case "all_to_all": return [[members[slot], members.indexOf(dest) * m + (k % m)]];
    case "scatter": return [[root, members.indexOf(dest) * m + k]];
    default: return null;
  }
}

/** The chunk length that makes the op's shapes agree, or null when they do not (uneven splits). */
function chunkLength(op, inLen, outLen, n) {
  if (["all_reduce", "reduce", "broadcast"].includes(op)) return inLen === outLen ? inLen : null;
  if (op === "all_gather" || op === "gather") return outLen === inLen * n ? inLen : null;
  if (op === "reduce_scatter" || op === "scatter") return inLen === outLen * n ? outLen : null;
  if (op === "all_to_all") return inLen === outLen && inLen % n === 0 ? inLen / n : null;
  return null;
}

/** The plan of a collective small enough to draw by its numbers in `width` px, or null. Inputs come
 *  from the members' begin events, outputs from their end events (null until that rank has finished). */
export function valuePlan(c, { width, rem }) {
  const members = [...c.ranks].sort((a, b) => a - b);
  const root = members.includes(c.root) ? c.root : members[0];
  const inputs = new Map(members.map((r) => [r, valuesOf(c.begins.get(r))]));
  const outputs = new Map(members.map((r) => [r, c.ends.has(r) ? valuesOf(c.ends.get(r)) : null]));
  const inLen = Math.max(0, ...[...inputs.values()].map((v) => v?.length || 0));
  const anyOut = [...outputs.values()].find((v) => v);
  const outLen = anyOut ? anyOut.length : expectedOutLength(c.op, inLen, members.length);
  if (!inLen || inLen > MOST_CELLS || outLen > MOST_CELLS || members.length > 8) return null;
  const m = chunkLength(c.op, inLen, outLen, members.length);
  if (!m) return null;
  const moves = [];
  for (const dest of members) {
    for (let k = 0; k < outLen; k++) {
      for (const [src, i] of sourcesOf(c.op, members, root, dest, k, m) || []) moves.push({ src, i, dest, k });
    }
  }
  const receivers = new Set(moves.map((mv) => mv.dest));
  if (!moves.length || [...receivers].some((r) => c.ends.has(r) && !outputs.get(r))) return null;   // an end without its numbers
  const all = [...inputs.values(), ...outputs.values()].filter(Boolean).flat();
  const format = numberFormat(all);
  const geometry = geometryOf(inLen, outLen, width, rem);
  const widest = Math.max(...all.map((v) => format(v).length));
  geometry.font = Math.min(0.95 * rem, (geometry.cell - 4) / (widest * 0.62));   // a monospace digit: ~0.6 em
  if (geometry.font < 0.6 * rem) return null;                       // the numbers would not fit their cells
  return { members, inputs, outputs, inLen, outLen, moves, reducing: REDUCING.has(c.op), format, geometry };
}

/** Integers as they are; else two decimals (one from 10 up): one format for the whole drawing. */
function numberFormat(all) {
  if (all.every((v) => Number.isInteger(v))) return (v) => String(v);
  const decimals = Math.max(...all.map(Math.abs).filter(Number.isFinite)) >= 10 ? 1 : 2;
  return (v) => (Number.isFinite(v) ? v.toFixed(decimals) : String(v));
}

/** Cells as wide as the width allows (at most 3 rem), with room for the rank names and the paths. */
function geometryOf(inLen, outLen, width, rem) {
  const label = 3.6 * rem;
  const gap = Math.max(4 * rem, width * 0.12);
  const cell = Math.min(3 * rem, (width - 2 * label - gap) / (inLen + outLen));
  return { label, gap, cell };
}

function expectedOutLength(op, inLen, n) {
  if (op === "all_gather" || op === "gather") return inLen * n;
  if (op === "reduce_scatter" || op === "scatter") return inLen / n;
  return inLen;
}

/** The SVG: inputs left, outputs right, a path and (while the data moves) a moving number per move. */
export function drawValues(plan, c, phase, { rem }) {
  const { members, inputs, outputs, inLen, outLen, moves, format } = plan;
  const { label, gap, cell } = plan.geometry;
  const rowH = 1.7 * rem;
  const rowGap = 0.8 * rem;
  const top = 1.8 * rem;
  const inX = label;
  const outX = label + inLen * cell + gap;
  const svgW = outX + outLen * cell + 0.5 * rem;
  const height = top + members.length * (rowH + rowGap);
  const rowY = (r) => top + members.indexOf(r) * (rowH + rowGap);
  const moving = phase.name === "moving";
  const reduceMotion = window.matchMedia?.("(prefers-reduced-motion: reduce)").matches;

  const svg = s("svg", {
    class: ["collective-svg", "collective-values", `op-${c.op}`, `phase-${phase.name}`],
    viewBox: `0 0 ${svgW} ${height}`, width: svgW, height, role: "img", style: `font-size: ${0.8 * rem}px`,
    "aria-label": t("{op} among ranks {ranks}: {phase}", { op: c.op, ranks: members.join(", "), phase: t(phase.name) }),
  });
  svg.append(s("text", { x: inX, y: 1.1 * rem, class: "values-side" }, t("before")),
    s("text", { x: outX, y: 1.1 * rem, class: "values-side" }, t("after")));
  const centre = (x0, i, r) => [x0 + (i + 0.5) * cell, rowY(r) + rowH / 2];
  const paths = moves.map((mv) => {
    const [x0, y0] = centre(inX, mv.i, mv.src);
    const [x1, y1] = centre(outX, mv.k, mv.dest);
    const a = x0 + (inLen - mv.i - 0.5) * cell;          // leave the input row at its right edge
    const b = outX - 0.2 * rem;                            // enter the output row at its left edge
    return { ...mv, d: `M${x0.toFixed(1)},${y0.toFixed(1)} L${a.toFixed(1)},${y0.toFixed(1)} C${(a + gap / 2).toFixed(1)},${y0.toFixed(1)} ${(b - gap / 2).toFixed(1)},${y1.toFixed(1)} ${b.toFixed(1)},${y1.toFixed(1)} L${x1.toFixed(1)},${y1.toFixed(1)}` };
  });
  for (const p of paths) {
    const arrived = outputs.get(p.dest) !== null;
    svg.append(s("path", { d: p.d, fill: "none", stroke: rankColour(p.src), class: ["value-path", arrived ? "arrived" : "pending"],
                           "stroke-width": 1.2, "stroke-opacity": phase.name === "waiting" ? 0.08 : arrived ? 0.22 : 0.4,
                           "data-src": p.src, "data-dest": p.dest }));
  }
  for (const r of members) {
    const y = rowY(r);
    svg.append(s("text", { x: 0.2 * rem, y: y + rowH / 2, "dominant-baseline": "central", class: "values-rank", fill: rankColour(r) }, `rank ${r}`));
    const gives = moves.some((mv) => mv.src === r);
    svg.append(row(inputs.get(r), inLen, inX, y, cell, rowH, () => rankColour(r), gives ? "in" : "in unchanged", r, format, plan.geometry.font));
    const sourceColour = (k) => (plan.reducing ? SUM_COLOUR : rankColour(moves.find((mv) => mv.dest === r && mv.k === k)?.src ?? r));
    const kept = moves.some((mv) => mv.dest === r);
    svg.append(row(kept ? outputs.get(r) : null, outLen, outX, y, cell, rowH, sourceColour, kept ? "out" : "out unchanged", r, format, plan.geometry.font));
  }
  if (moving && !reduceMotion && paths.length <= MOST_TOKENS) {
    paths.forEach((p, idx) => {
      if (outputs.get(p.dest) !== null) return;            // that rank has its output already
      svg.append(token(p, inputs.get(p.src)?.[p.i], cell, rowH, rem, idx, format, plan.geometry.font));
    });
  }
  return svg;
}

/** One rank's cells, each with its number (an empty dashed cell where the rank has not got it yet). */
function row(values, length, x0, y, cell, rowH, colourOf, side, rank, format, font) {
  const g = s("g", { class: ["value-row", ...side.split(" ")], "data-rank": rank });
  for (let i = 0; i < length; i++) {
    const v = values?.[i];
    const known = values && v !== undefined;
    g.append(s("rect", { x: x0 + i * cell + 1, y, width: cell - 2, height: rowH, rx: 3, class: ["value-cell", known ? "known" : "empty"],
                         stroke: known ? colourOf(i) : "#94a3b8", "stroke-width": known ? 2.2 : 1.2,
                         "stroke-dasharray": known ? null : "3 3" }));
    if (known) g.append(s("text", { x: x0 + (i + 0.5) * cell, y: y + rowH / 2, "text-anchor": "middle", "dominant-baseline": "central",
                                   class: "value-number", "data-index": i, "font-size": font }, format(v)));
  }
  return g;
}

/** A number on its way from its source slot to its destination slot, again and again. */
function token(p, value, cell, rowH, rem, idx, format, font) {
  const w = Math.min(cell - 4, 2.4 * rem);
  const h = rowH * 0.75;
  return s("g", { class: "value-token", "data-src": p.src, "data-dest": p.dest },
    s("rect", { x: -w / 2, y: -h / 2, width: w, height: h, rx: 3, fill: rankColour(p.src) }),
    s("text", { x: 0, y: 0, "text-anchor": "middle", "dominant-baseline": "central", class: "token-number", "font-size": font }, value === undefined ? "" : format(value)),
    s("animateMotion", { dur: `${CYCLE_S}s`, repeatCount: "indefinite", path: p.d, calcMode: "linear",
                         keyTimes: "0;0.8;1", keyPoints: "0;1;1", begin: `${((idx % 8) * 0.06).toFixed(2)}s` }));
}
