/**
 * A Gantt chart of the ranks: one row per rank, each row one or more lanes (compute, communication),
 * blocks on one time axis in milliseconds, arrows between rows (send → recv), a line at the cursor.
 * Pure drawing: the caller turns the spans at the cursor into rows of blocks (see timeline.js and
 * pipeline.js), so the same chart serves the pipeline, data-parallel and 3D lessons.
 *
 *   rows:   [{rank, label, sub, badge, right, rightTitle, rightClass, lanes: [{height (rem), cls, blocks}]}]
 *   blocks: [{t0, t1, fill, stroke, text, short, ink, cls, title, tick, data, id}]   (tick: a mark at t0; id: kept across draws)
 *   arrows: [{from: {row, t}, to: {row, t}, cls, title}]   from the bottom of one row's last lane to the top of another's
 */

import { morphElement, nodeCache, place, s, setAttributes } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { CANVAS_BLOCKS, ganttCanvas, layRows } from "paralab/views/gantt-canvas.js";

/** A tick step of 1, 2 or 5 × 10^k that cuts `span` into about `parts`. */
export function niceStep(span, parts = 6) {
  const raw = Math.max(span, 1e-9) / parts;
  const k = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (raw <= m * k) return m * k;
  return 10 * k;
}

/** The time axis (seconds) from `start`, its end rounded up to half ticks so it grows in steps. */
export function timeAxis(start, end) {
  const step = niceStep(Math.max(end - start, 1e-3));
  const halves = Math.max(1, Math.ceil((2 * (end - start)) / step - 1e-9));
  return { start, end: start + (halves * step) / 2, step };
}

export function formatMs(seconds) {
  const ms = seconds * 1e3;
  return `${Number(ms.toFixed(ms < 10 ? 1 : 0))} ms`;
}

/** The horizontal layout every chart of a panel shares, so their rows line up. */
export function ganttFrame({ width, rem, labelRem = 5, rightRem = 5.6 }) {
  const left = labelRem * rem;
  const right = width - rightRem * rem;
  return { width, rem, left, right, plot: right - left };
}

export function xScale(frame, axis) {
  return (t) => frame.left + ((t - axis.start) / (axis.end - axis.start)) * frame.plot;
}

/** A text fits a block `w` px wide at `px` px per character? Returns the text to draw, or null. */
export function fitText(block, w, px) {
  for (const text of [block.text, block.short]) {
    if (text !== undefined && text !== null && text !== "" && String(text).length * px + 2 <= w) return String(text);
  }
  return null;
}

/** The rank's chip, and under it what the row holds ("stage 2") and a warning ("slow ×3"). */
export function rowLabel(row, y, height, frame, { chip = true } = {}) {
  const rem = frame.rem;
  const g = s("g", { class: "gantt-row-label" });
  const lines = [row.sub, row.badge].filter(Boolean).length;
  const cy = y + height / 2 - lines * 0.45 * rem;
  const w = Math.min(4.4 * rem, frame.left - 0.4 * rem);
  g.append(s("rect", { x: 0.2 * rem, y: cy - 0.72 * rem, width: w, height: 1.44 * rem, rx: 0.72 * rem, fill: chip ? rankColour(row.rank) : null,
                       class: chip ? null : "ideal-rank-chip" }),
    s("text", { x: 0.2 * rem + w / 2, y: cy, "text-anchor": "middle", "dominant-baseline": "central", class: ["gantt-rank", !chip && "ideal"] },
      row.label ?? `rank ${row.rank}`));
  let ty = cy + 1.25 * rem;
  for (const [text, cls] of [[row.sub, "gantt-sub"], [row.badge, "gantt-badge"]]) {
    if (!text) continue;
    g.append(s("text", { x: 0.2 * rem + w / 2, y: ty, "text-anchor": "middle", "dominant-baseline": "central", class: cls }, text));
    ty += 0.95 * rem;
  }
  return g;
}

/**
 * The chart as an SVG element (a canvas, gantt-canvas.js, past CANVAS_BLOCKS blocks). `axis` from timeAxis; `now`: the cursor's time (a vertical line);
 * `axisLabel`: under the ticks; `lasting`: a block or arrow given once is never changed (the canvas then keeps a picture). `cache` (dom.js nodeCache): a redraw with it keeps the same <svg> and
 * every part whose drawing did not change — a step moves a few blocks, not the chart.
 */
export function ganttSvg({ rows, arrows = [], lasting = false, axis, frame, now = null, axisLabel = "time since the first block (ms)",
                           className = "", ariaLabel = "timeline of each rank", gap = 0.45, cache = nodeCache() }) {
  const blocks = rows.reduce((n, row) => n + row.lanes.reduce((k, lane) => k + lane.blocks.length, 0), 0);
  if (blocks > CANVAS_BLOCKS) {       // a big run: painted, zoomable (gantt-canvas.js)
    const canvas = cache.get("canvas", () => document.createElement("canvas"));
    cache.done();
    return ganttCanvas(canvas, { rows, arrows, lasting, axis, frame, now, axisLabel, className, ariaLabel, gap });
  }
  const rem = frame.rem;
  const X = xScale(frame, axis);
  const { laid, top, plotBottom, height } = layRows(rows, rem, gap);
  const leaf = (tag, attrs, text) => cache.get(tag + JSON.stringify(attrs) + (text ?? ""), () => s(tag, attrs, text));
  const svg = setAttributes(cache.get("svg", () => s("svg", {})), {
    class: ["gantt", className].filter(Boolean).join(" "), viewBox: `0 0 ${frame.width} ${height}`, width: frame.width, height,
    role: "img", "aria-label": ariaLabel, style: `font-size: ${0.78 * rem}px` });
  const parts = [cache.get("defs", ganttDefs)];

  // ticks and grid
  for (let t = axis.start, i = 0; t <= axis.end + 1e-9; t += axis.step, i++) {
    const x = X(t);
    parts.push(leaf("line", { x1: x, x2: x, y1: top, y2: plotBottom, class: "gantt-grid" }),
      leaf("text", { x, y: plotBottom + 0.9 * rem, "text-anchor": i === 0 ? "start" : "middle", class: "gantt-tick" }, formatMs(t - axis.start)));
  }
  parts.push(leaf("text", { x: frame.left + frame.plot / 2, y: plotBottom + 2.1 * rem, "text-anchor": "middle", class: "gantt-axis-label" }, axisLabel));

  const charPx = 0.84 * rem * 0.62;      // bold block text at 0.84rem
  for (const { row, y0, y1, lanes } of laid) {
    const cls = ["gantt-row", ...[row.cls].flat()];
    const g = cache.get(`row${JSON.stringify([row.rank, cls])}`, () => s("g", { class: cls, "data-rank": row.rank }));
    const rowParts = [leaf("rect", { x: frame.left, y: y0, width: frame.plot, height: y1 - y0, class: "gantt-row-bg" }),
      cache.get(`label${JSON.stringify([row.rank, row.label, row.sub, row.badge, y0, y1, frame.left, rem])}`, () => rowLabel(row, y0, y1 - y0, frame))];
    lanes.forEach((lane, k) => {
      const laneCls = ["gantt-lane", ...[lane.cls].flat()];
      const lg = cache.get(`lane${JSON.stringify([row.rank, k, laneCls])}`, () => s("g", { class: laneCls }));
      rowParts.push(place(lg, [leaf("line", { x1: frame.left, x2: frame.right, y1: lane.y + lane.h, y2: lane.y + lane.h, class: "gantt-baseline" }),
        ...lane.blocks.map((b) => drawBlock(b, lane, X, frame, charPx, rem, cache))]));
    });
    if (row.right !== undefined && row.right !== null) {
      const right = { x: frame.right + 0.5 * rem, y: (y0 + y1) / 2, "dominant-baseline": "central", class: ["gantt-right", ...[row.rightClass].flat()] };
      rowParts.push(cache.get(`right${JSON.stringify([right, row.right, row.rightTitle])}`,
        () => s("text", right, row.right, row.rightTitle ? s("title", {}, row.rightTitle) : null)));
    }
    parts.push(place(g, rowParts));
  }

  for (const a of arrows) {
    const from = laid[a.from.row];
    const to = laid[a.to.row];
    if (!from || !to) continue;
    const x0 = X(a.from.t);
    const x1 = X(a.to.t);
    if (Math.max(x0, x1) < frame.left || Math.min(x0, x1) > frame.right) continue;
    const down = a.to.row > a.from.row;
    const y0 = down ? from.y1 : from.y0;
    const y1 = down ? to.y0 : to.y1;
    const attrs = { d: `M${x0.toFixed(1)},${y0.toFixed(1)} L${x1.toFixed(1)},${y1.toFixed(1)}`, class: ["gantt-arrow", ...[a.cls].flat()],
                    "marker-end": "url(#gantt-arrow)" };
    parts.push(cache.get(`arrow${JSON.stringify([attrs, a.title])}`, () => s("path", attrs, a.title ? s("title", {}, a.title) : null)));
  }

  if (now !== null && now >= axis.start && now <= axis.end) {
    const x = X(now);
    parts.push(leaf("line", { x1: x, x2: x, y1: top - 0.2 * rem, y2: plotBottom, class: "gantt-now" }));
  }
  cache.done();
  return place(svg, parts);
}

function ganttDefs() {
  return s("defs", {},
    s("marker", { id: "gantt-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 5, markerHeight: 5, orient: "auto-start-reverse" },
      s("path", { d: "M0,0 L10,5 L0,10 z", class: "gantt-arrowhead" })),
    s("pattern", { id: "gantt-hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
      s("rect", { width: 6, height: 6, fill: "#fef3c7" }), s("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#f59e0b", "stroke-width": 3 })));
}

/**
 * A block's <g> (its rect, title and text), or a send's tick. With an `id` (a span's seq), the block is
 * the same node from step to step and changed in place when it changes (a running recv grows);
 * without one, the cached node drawn exactly so.
 */
function drawBlock(b, lane, X, frame, charPx, rem, cache) {
  const x0 = Math.max(frame.left, X(b.t0));
  if (b.tick) {
    if (X(b.t0) < frame.left || x0 > frame.right) return cache.get("nothing", () => s("g", {}));
    const attrs = { d: `M${x0},${lane.y + lane.h} l${-0.28 * rem},${-0.45 * rem} h${0.56 * rem} z`, class: ["gantt-tick-mark", ...[b.cls].flat()], fill: b.fill };
    return kept(cache, b.id === undefined ? undefined : `tick ${b.id}`, `tick${JSON.stringify([attrs, b.title])}`,
      () => s("path", attrs, b.title ? s("title", {}, b.title) : null));
  }
  if (X(b.t1) < frame.left || x0 > frame.right) return cache.get("nothing", () => s("g", {}));   // wholly outside the axis
  const x1 = Math.min(frame.right, X(b.t1));
  const w = Math.max(x1 - x0, 2);
  const attrs = { class: ["gantt-block", ...[b.cls].flat()], ...(b.data || {}) };
  const rect = { x: x0, y: lane.y, width: w, height: lane.h, fill: b.fill, stroke: b.stroke || "var(--card, white)",
                 "stroke-width": b.stroke ? 1.5 : 1, rx: Math.min(3, w / 3) };
  const text = fitText(b, w, charPx);
  return kept(cache, b.id === undefined ? undefined : `block ${b.id}`, `block${JSON.stringify([attrs, rect, b.title, text, b.ink])}`, () => s("g", attrs,
    s("rect", rect),
    b.title ? s("title", {}, b.title) : null,
    text ? s("text", { x: x0 + w / 2, y: lane.y + lane.h / 2, "text-anchor": "middle", "dominant-baseline": "central",
                       class: "gantt-text", fill: b.ink || "white" }, text) : null));
}

const drawnAs = new WeakMap();   // a node kept under an id → the key of what it shows

/** The node for `id` (made, or kept and changed in place when its `key` changed); without an id, the node for `key`. */
function kept(cache, id, key, make) {
  if (id === undefined) return cache.get(key, make);
  const node = cache.get(id, make);
  if (drawnAs.get(node) !== key) {
    if (drawnAs.has(node)) morphElement(node, make());
    drawnAs.set(node, key);
  }
  return node;
}
