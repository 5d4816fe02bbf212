/**
 * The Gantt chart of a big run, painted on a canvas: the same rows, lanes, blocks and arrows as
 * gantt.js's SVG (same input, same layout), for charts of hundreds of blocks, where thousands of SVG
 * nodes cost every step its style and layout. As Perfetto does:
 *
 * - it zooms and pans: the wheel zooms about the pointer, a drag pans, and with the chart focused
 *   + and − zoom, ← and → pan (Shift: further), 0 shows the whole run again;
 * - it thins its arrows when zoomed out: at most one arrow per few pixels of each pair of rows is
 *   drawn (the arrows of the current step always are), so a pipeline of 32 microbatches is not a
 *   thicket;
 * - hovering a block names it (the tooltip of controls/hover.js reads `canvas.gantt.titleAt`).
 */

import { rankColour } from "paralab/palette.js";
import { fitText, formatMs, niceStep, xScale } from "paralab/views/gantt.js";

/** Charts with more blocks than this are painted on a canvas (fewer: SVG, a node per block). */
export const CANVAS_BLOCKS = 300;
const ARROW_SPACING_PX = 12;       // zoomed out, one arrow per this many pixels of a pair of rows
const MIN_SPAN_FRACTION = 1e-3;    // the deepest zoom: a thousandth of the run

let colours = null;
/** The page's colours, read once (a style read in the middle of a drawing would force a layout). */
function palette() {
  if (colours) return colours;
  const css = getComputedStyle(document.documentElement);
  const v = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  colours = { ink: v("--ink", "#0f172a"), soft: v("--ink-soft", "#475569"), card: v("--card", "#ffffff"),
              line: v("--line", "#e2e8f0"), rowBg: "rgba(100, 116, 139, 0.09)", now: "#dc2626", hatch: "#fde68a" };
  return colours;
}

/** A fill or stroke as the canvas can take it (no CSS variables, no SVG patterns). */
function paint(value, fallback) {
  if (!value || value === "none") return null;
  if (value.startsWith("url(")) return palette().hatch;
  if (value.startsWith("var(")) return fallback;
  return value;
}

/** The rows' vertical layout, one for both drawings (gantt.js's SVG and this canvas). */
export function layRows(rows, rem, gap) {
  const top = 0.3 * rem;
  const laid = [];
  let y = top;
  for (const row of rows) {
    const lanes = [];
    for (const lane of row.lanes) {
      const h = lane.height * rem;
      lanes.push({ ...lane, y, h });
      y += h + 0.12 * rem;
    }
    laid.push({ row, y0: lanes[0]?.y ?? y, y1: y - 0.12 * rem, lanes });
    y += gap * rem;
  }
  const plotBottom = y - gap * rem + 0.2 * rem;
  return { laid, top, plotBottom, height: plotBottom + 2.6 * rem };
}

/** The part of `axis` shown at zoom `view` ({from, to}: fractions of the axis). */
function shownAxis(axis, view) {
  const span = axis.end - axis.start;
  const start = axis.start + view.from * span;
  const end = axis.start + view.to * span;
  return { start, end, step: niceStep(end - start), origin: axis.start };
}

const defaultTickText = (t, origin) => formatMs(t - origin);

/**
 * The chart on `canvas` (kept from step to step: its zoom stays). Arguments as gantt.js's ganttSvg.
 * Returns the canvas.
 */
export function ganttCanvas(canvas, { rows, arrows = [], lasting = false, axis, frame, now = null, axisLabel = "time since the first block (ms)",
                                      className = "", ariaLabel = "timeline of each rank", gap = 0.45,
                                      tickText = defaultTickText }) {
  const rem = frame.rem;
  const layout = layRows(rows, rem, gap);
  if (!canvas.gantt) bindZoom(canvas);
  Object.assign(canvas.gantt, { rows, arrows, lasting, axis, frame, now, axisLabel, gap, layout, tickText });
  canvas.className = ["gantt", "gantt-canvas", className].filter(Boolean).join(" ");
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", ariaLabel);
  canvas.tabIndex = 0;
  paintChart(canvas);
  return canvas;
}

function paintChart(canvas) {
  const g = canvas.gantt;
  const { axis, frame, now, layout, view } = g;
  const { laid, top, plotBottom, height } = layout;
  const rem = frame.rem;
  const dpr = window.devicePixelRatio || 1;
  const width = frame.width;
  if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(height * dpr)) {
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const shown = shownAxis(axis, view);
  const X = xScale(frame, shown);
  const c = palette();
  if (g.lasting) composePlot(canvas, ctx, X, dpr);
  else {
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    paintFrame(ctx, g, shown, X);
    paintItems(ctx, g, X);
  }
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);

  // each row's number on the right (it changes as the run goes: not part of a kept picture)
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  ctx.fillStyle = c.ink;
  ctx.font = font(700, 0.78 * rem);
  for (const { row, y0, y1 } of laid) {
    if (row.right !== undefined && row.right !== null) ctx.fillText(String(row.right), frame.right + 0.5 * rem, (y0 + y1) / 2);
  }
  if (now !== null && now >= shown.start && now <= shown.end) {
    const x = X(now);
    ctx.strokeStyle = c.now;
    ctx.lineWidth = 2;
    ctx.setLineDash([5, 3]);
    ctx.beginPath();
    ctx.moveTo(x, top - 0.2 * rem);
    ctx.lineTo(x, plotBottom);
    ctx.stroke();
    ctx.setLineDash([]);
  }
}

const font = (weight, size) => `${weight} ${size}px system-ui, sans-serif`;

function clipToPlot(ctx, frame, height) {
  ctx.beginPath();
  ctx.rect(frame.left, 0, frame.plot, height);
  ctx.clip();
}

/** What a move does not change: the rows' backgrounds and labels, the ticks, the axis's title, each lane's line. */
function paintFrame(ctx, { frame, axisLabel, layout, view, tickText }, shown, X) {
  const { laid, top, plotBottom } = layout;
  const rem = frame.rem;
  const c = palette();
  for (const { row, y0, y1 } of laid) {
    ctx.fillStyle = c.rowBg;
    ctx.fillRect(frame.left, y0, frame.plot, y1 - y0);
    const cy = (y0 + y1) / 2 - [row.sub, row.badge].filter(Boolean).length * 0.45 * rem;
    const w = Math.min(4.4 * rem, frame.left - 0.4 * rem);
    ctx.fillStyle = rankColour(row.rank);
    roundRect(ctx, 0.2 * rem, cy - 0.72 * rem, w, 1.44 * rem, 0.72 * rem);
    ctx.fill();
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillStyle = "white";
    ctx.font = font(800, 0.78 * rem);
    ctx.fillText(row.label ?? `rank ${row.rank}`, 0.2 * rem + w / 2, cy);
    let ty = cy + 1.25 * rem;
    for (const [text, colour] of [[row.sub, c.soft], [row.badge, "#dc2626"]]) {
      if (!text) continue;
      ctx.fillStyle = colour;
      ctx.font = font(700, 0.72 * rem);
      ctx.fillText(text, 0.2 * rem + w / 2, ty);
      ty += 0.95 * rem;
    }
  }

  // ticks and grid, in ms since the run's first block
  ctx.strokeStyle = c.line;
  ctx.lineWidth = 1;
  ctx.fillStyle = c.soft;
  ctx.font = font(500, 0.78 * rem);
  ctx.textBaseline = "middle";
  const firstTick = Math.ceil((shown.start - shown.origin) / shown.step - 1e-9) * shown.step + shown.origin;
  for (let t = firstTick; t <= shown.end + 1e-9; t += shown.step) {
    const x = X(t);
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, plotBottom);
    ctx.stroke();
    ctx.textAlign = x - frame.left < 1 ? "start" : "center";
    ctx.fillText(tickText(t, shown.origin), x, plotBottom + 0.9 * rem);
  }
  ctx.textAlign = "center";
  ctx.font = font(650, 0.78 * rem);
  const zoomed = view.from > 0 || view.to < 1;
  ctx.fillText(zoomed ? `${axisLabel} · ×${(1 / (view.to - view.from)).toFixed(1)}` : axisLabel, frame.left + frame.plot / 2, plotBottom + 2.1 * rem);

  ctx.save();
  clipToPlot(ctx, frame, layout.height);
  ctx.strokeStyle = c.line;
  ctx.lineWidth = 1;
  for (const { lanes } of laid) {
    for (const lane of lanes) {
      ctx.beginPath();
      ctx.moveTo(frame.left, lane.y + lane.h);
      ctx.lineTo(frame.right, lane.y + lane.h);
      ctx.stroke();
    }
  }
  ctx.restore();
}

// ---- the blocks and arrows ------------------------------------------------------------------------------

const EDGE_PX = 2;             // how far past its edges a block's painting may reach (antialiasing, a text's glyphs)
const OUTLINE_PX = 4;          // how far past its edges a block's outline reaches, when it is current or open
const ARROW_PX = 8;            // how far past its ends an arrow's painting may reach (its width, its head)

/** The x range a block paints ([left, right], CSS px, its outline's margin in), or null where it paints nothing. */
function blockReach(b, X, frame) {
  const x = X(b.t0);
  if (b.tick) return x < frame.left || x > frame.right ? null : [x - 0.28 * frame.rem - EDGE_PX, x + 0.28 * frame.rem + EDGE_PX];
  const x0 = Math.max(frame.left - 2, x);
  const x1 = Math.min(frame.right + 2, X(b.t1));
  if (x1 < frame.left || x0 > frame.right) return null;
  return [x0 - OUTLINE_PX, x0 + Math.max(x1 - x0, 1.5) + OUTLINE_PX];
}

/** Where an arrow is drawn ({x0, x1, y0, y1}), or null where it is not (its rows not shown, or out of view). */
function arrowLine(a, laid, X, frame) {
  const from = laid[a.from.row];
  const to = laid[a.to.row];
  if (!from || !to) return null;
  const x0 = X(a.from.t);
  const x1 = X(a.to.t);
  if (Math.max(x0, x1) < frame.left || Math.min(x0, x1) > frame.right) return null;
  const down = a.to.row > a.from.row;
  return { x0, x1, y0: down ? from.y1 : from.y0, y1: down ? to.y0 : to.y1 };
}

/** The box an arrow's line paints ({x: [left, right], y: [top, bottom]}, CSS px). */
function arrowReach(line) {
  return { x: [Math.min(line.x0, line.x1) - ARROW_PX, Math.max(line.x0, line.x1) + ARROW_PX],
           y: [Math.min(line.y0, line.y1) - ARROW_PX, Math.max(line.y0, line.y1) + ARROW_PX] };
}

/**
 * Paint the plot's blocks, then the current and open ones' outlines, then the arrows, clipped to the plot: all of
 * them, or those whose box ([x0, x1], [y0, y1]: CSS px) `wanted` says. Returns how many blocks it painted. A big
 * run's chart paints thousands of blocks at a move: the canvas's state (a colour, the alpha, the font) is set only
 * when it changes.
 */
function paintItems(ctx, g, X, wanted = () => true) {
  const { frame, arrows, layout: { laid, height } } = g;
  const blocks = [];
  for (const { lanes } of laid) {
    for (const lane of lanes) {
      const ys = [lane.y - OUTLINE_PX, lane.y + lane.h + OUTLINE_PX];
      for (const b of lane.blocks) {
        const reach = blockReach(b, X, frame);
        if (reach && wanted(reach, ys)) blocks.push({ b, lane });
      }
    }
  }
  const drawn = thinned(arrows, laid, X, frame).filter(({ line }) => {
    const reach = arrowReach(line);
    return wanted(reach.x, reach.y);
  });
  ctx.save();
  clipToPlot(ctx, frame, height);
  paintBlocks(ctx, blocks, X, frame);
  paintArrows(ctx, drawn);
  ctx.restore();
  return blocks.length;
}

/** The blocks ([{b, lane}], in the order of their lanes), then the current and open ones' outlines. */
function paintBlocks(ctx, blocks, X, frame) {
  const rem = frame.rem;
  const c = palette();
  const charPx = 0.84 * rem * 0.62;
  const minTextPx = charPx + 2;           // narrower than one character: no text to fit
  const outlined = [];
  const pen = penOf(ctx);
  ctx.font = font(800, 0.84 * rem);
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (const { b, lane } of blocks) {
    const bottom = lane.y + lane.h;
    if (b.tick) {
      const x = X(b.t0);
      pen.alpha(1);
      pen.fill(paint(b.fill, c.soft));
      ctx.beginPath();
      ctx.moveTo(x, bottom);
      ctx.lineTo(x - 0.28 * rem, bottom - 0.45 * rem);
      ctx.lineTo(x + 0.28 * rem, bottom - 0.45 * rem);
      ctx.fill();
      continue;
    }
    const x0 = Math.max(frame.left - 2, X(b.t0));
    const w = Math.max(Math.min(frame.right + 2, X(b.t1)) - x0, 1.5);
    pen.alpha(b.faded ? 0.3 : 1);          // the ideal grid's actions not run yet
    pen.fill(paint(b.fill, c.soft));
    ctx.fillRect(x0, lane.y, w, lane.h);
    const stroke = w > 3 ? paint(b.stroke, null) : null;
    if (stroke) {
      pen.stroke(stroke);
      ctx.lineWidth = 1.5;
      ctx.strokeRect(x0 + 0.75, lane.y + 0.75, w - 1.5, lane.h - 1.5);
    }
    const isCurrent = hasClass(b.cls, "current");
    if (isCurrent || hasClass(b.cls, "open")) outlined.push({ x0, w, lane, open: !isCurrent });
    const text = w >= minTextPx ? fitText(b, w, charPx) : null;
    if (text) {
      pen.fill(paint(b.ink, "white") || "white");
      ctx.fillText(text, x0 + w / 2, lane.y + lane.h / 2);
    }
  }
  ctx.globalAlpha = 1;
  for (const { x0, w, lane, open } of outlined) {      // outlined above their neighbours
    ctx.strokeStyle = c.ink;
    ctx.lineWidth = open ? 1.5 : 3;
    ctx.setLineDash(open ? [3, 2] : []);
    ctx.strokeRect(x0, lane.y, w, lane.h);
  }
  ctx.setLineDash([]);
}

/** The arrows in view, thinned: per pair of rows, one per few pixels (the current ones always): [{a, line}]. */
function thinned(arrows, laid, X, frame) {
  const taken = new Set();
  const kept = [];
  for (const a of arrows) {
    const line = arrowLine(a, laid, X, frame);
    if (!line) continue;
    const current = hasClass(a.cls, "current");
    const slot = (a.from.row * 4096 + a.to.row) * 1e7 + Math.round(line.x0 / ARROW_SPACING_PX) + 1e6;   // a number: no string per arrow
    if (!current && taken.has(slot)) continue;
    taken.add(slot);
    kept.push({ a, line });
  }
  return kept;
}

/** Arrows ([{a, line}]) from the bottom of one row's last lane to the top of another's: the current ones last, darker. */
function paintArrows(ctx, arrows) {
  const c = palette();
  for (const current of [false, true]) {      // a path per arrow: one path of them all rasterises several times slower
    ctx.strokeStyle = current ? c.ink : "rgba(71, 85, 105, 0.45)";
    ctx.fillStyle = current ? c.ink : c.soft;
    ctx.lineWidth = current ? 2.5 : 1.2;
    const head = current ? 7 : 5;
    for (const { a, line: { x0, x1, y0, y1 } } of arrows) {
      if (hasClass(a.cls, "current") !== current) continue;
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      ctx.lineTo(x1, y1);
      ctx.stroke();
      const angle = Math.atan2(y1 - y0, x1 - x0);
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - head * Math.cos(angle - 0.45), y1 - head * Math.sin(angle - 0.45));
      ctx.lineTo(x1 - head * Math.cos(angle + 0.45), y1 - head * Math.sin(angle + 0.45));
      ctx.fill();
    }
  }
}

// ---- the kept picture -----------------------------------------------------------------------------------
// A chart whose blocks and arrows last (`lasting`: a block or arrow, once given, is never changed — a new look comes
// as a new object, as pipeline.js's blocks of spans that ended, kept by seq, or the ideal grid's cells in each of
// their three states) is composed on layers. It keeps, for its frame (size, axis, zoom, rows), a painting of the
// frame alone and a picture of some place (frame, blocks, outlines, arrows: the plot, not the rows' numbers or the
// cursor's line). A move finds, band by band of the canvas (a row's, from the middle of the gap above it to the
// middle of the gap below), where its chart departs from the picture: from the leftmost to the rightmost reach of the
// blocks that are not the same objects in both (each lane's, index by index), and of the arrows from the first that
// is not (an arrow's thinning depends on those before it). On a scratch layer it paints, over the frame, the blocks
// and arrows that reach those stretches, just as a whole painting paints them (the same clip: a canvas antialiases a
// shape by the clip it is painted in); it takes each band's stretch from the scratch layer and the rest from the
// picture. The plot is then the whole painting's, pixel for pixel. A finished run's chart has one axis at every place
// (pipeline.js), so the picture of its end serves a move anywhere: only what lies between the cursor's oldest open
// span and the cursor is painted, row by row. A plot that painted more than REKEEP_AFTER blocks, and is as far on as
// its picture (as many blocks), becomes the picture.

const REKEEP_AFTER = 256;

/** The chart's frame, as a key: the kept paintings serve only the same one. */
function frameKey(g, dpr) {
  const { laid, height } = g.layout;
  return JSON.stringify([dpr, g.frame, height, g.axis, g.view, g.axisLabel, g.gap, g.tickText === defaultTickText ? null : String(g.tickText),
    laid.map(({ row, y0, y1, lanes }) => [row.rank, row.label, row.sub, row.badge, y0, y1, lanes.length])]);
}

/** A layer the size of `canvas`, cleared, untransformed (`layer`, reused, or a new one). */
function layerLike(canvas, layer) {
  if (!layer) {
    layer = document.createElement("canvas");
    layer.getContext("2d", { willReadFrequently: true });      // kept in memory, not on the GPU: layers are copied from
  }
  if (layer.width !== canvas.width || layer.height !== canvas.height) {
    layer.width = canvas.width;
    layer.height = canvas.height;
  } else {
    const lctx = layer.getContext("2d");
    lctx.setTransform(1, 0, 0, 1, 0, 0);
    lctx.clearRect(0, 0, layer.width, layer.height);
  }
  return layer;
}

/** The lasting chart's plot at its rows onto `ctx` (the canvas's, untransformed), composed from its kept picture
 *  where it can be (see above). */
function composePlot(canvas, ctx, X, dpr) {
  const g = canvas.gantt;
  const key = frameKey(g, dpr);
  if (g.kept?.key !== key) {
    const frameLayer = layerLike(canvas, g.kept?.frame);
    const shown = shownAxis(g.axis, g.view);
    frameLayer.getContext("2d").setTransform(dpr, 0, 0, dpr, 0, 0);
    paintFrame(frameLayer.getContext("2d"), g, shown, xScale(g.frame, shown));
    g.kept = { key, frame: frameLayer, picture: null, spare: g.kept?.spare ?? g.kept?.picture, scratch: g.kept?.scratch, lanes: null, arrows: null, blocks: 0 };
  }
  const kept = g.kept;
  const lanes = g.layout.laid.flatMap((l) => l.lanes);
  const count = blockCount(lanes);
  const keep = (picture) => {
    kept.spare = kept.picture;
    Object.assign(kept, { picture, lanes: lanes.map((lane) => lane.blocks.slice()), arrows: g.arrows.slice(), blocks: count });
    ctx.drawImage(picture, 0, 0);
  };
  if (!kept.picture) {          // painted whole, as the picture
    const plot = layerLike(canvas, kept.spare);
    const pctx = plot.getContext("2d");
    pctx.drawImage(kept.frame, 0, 0);
    pctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.painted = { from: 0, blocks: paintItems(pctx, g, X) };      // what this move painted afresh (the tests read it)
    return keep(plot);
  }
  const bands = bandsOf(g.layout, dpr, canvas.height);
  const spans = departures(kept, g, lanes, X, bands).map(([lo, hi]) => [Math.max(0, Math.floor(lo * dpr)), Math.min(canvas.width, Math.ceil(hi * dpr))]);
  const scratch = (kept.scratch = layerLike(canvas, kept.scratch));
  const sctx = scratch.getContext("2d");
  const copy = (target, source, top, bottom, x0, x1) => {
    if (x1 > x0) target.drawImage(source, x0, top, x1 - x0, bottom - top, x0, top, x1 - x0, bottom - top);
  };
  bands.forEach(({ top, bottom }, k) => copy(sctx, kept.frame, top, bottom, ...spans[k]));
  sctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  const painted = paintItems(sctx, g, X, ([x0, x1], [y0, y1]) => bands.some(({ top, bottom }, k) =>
    x1 * dpr >= spans[k][0] && x0 * dpr < spans[k][1] && y1 * dpr >= top && y0 * dpr < bottom));
  const from = Math.min(...spans.map(([x0, x1]) => (x1 > x0 ? x0 : canvas.width)));
  g.painted = { from: from / dpr, blocks: painted };
  // a plot that painted many blocks, as far on as the picture, is composed on a layer and becomes the picture
  const rekeep = painted > REKEEP_AFTER && count >= kept.blocks;
  const target = rekeep ? layerLike(canvas, kept.spare).getContext("2d") : ctx;
  bands.forEach(({ top, bottom }, k) => {
    const [x0, x1] = spans[k];
    if (x1 <= x0) return copy(target, kept.picture, top, bottom, 0, canvas.width);       // nothing departs from it here
    copy(target, kept.picture, top, bottom, 0, x0);
    copy(target, scratch, top, bottom, x0, x1);
    copy(target, kept.picture, top, bottom, x1, canvas.width);
  });
  if (rekeep) keep(target.canvas);
}

const blockCount = (lanes) => lanes.reduce((n, lane) => n + lane.blocks.length, 0);

/** The canvas's bands, one per row ({top, bottom}: device rows), from the canvas's top to its bottom. */
function bandsOf(layout, dpr, height) {
  const { laid } = layout;
  const edges = laid.slice(1).map((l, k) => Math.round((dpr * (laid[k].y1 + l.y0)) / 2));
  return [0, ...edges].map((top, k) => ({ top, bottom: k < edges.length ? edges[k] : height }));
}

/** A block painted as `other` is (the same object, or a tick — a send's — at the same place in the same colour). */
const paintedAlike = (b, other) => b === other || (b?.tick && other?.tick && b.t0 === other.t0 && b.fill === other.fill);

/** Each band's xs (CSS px: [lo, hi]) outside which the chart of `lanes` (its lanes) paints what the kept picture shows
 *  there ([Infinity, -Infinity]: all of it). */
function departures(kept, g, lanes, X, bands) {
  const { arrows, frame, layout: { laid } } = g;
  const dpr = window.devicePixelRatio || 1;
  const cuts = bands.map(() => [Infinity, -Infinity]);
  const cutAt = ([x0, x1], [y0, y1]) => {
    bands.forEach(({ top, bottom }, k) => {
      if (y1 * dpr >= top && y0 * dpr < bottom) cuts[k] = [Math.min(cuts[k][0], x0), Math.max(cuts[k][1], x1)];
    });
  };
  lanes.forEach((lane, k) => {
    const was = kept.lanes[k];
    const now = lane.blocks;
    const ys = [lane.y - OUTLINE_PX, lane.y + lane.h + OUTLINE_PX];
    for (let i = 0, n = Math.max(was.length, now.length); i < n; i++) {
      if (paintedAlike(was[i], now[i])) continue;
      for (const b of [was[i], now[i]]) {
        const reach = b && blockReach(b, X, frame);
        if (reach) cutAt(reach, ys);
      }
    }
  });
  let same = 0;
  while (same < arrows.length && same < kept.arrows.length && arrows[same] === kept.arrows[same]) same += 1;
  for (const list of [arrows, kept.arrows]) {
    for (let i = same; i < list.length; i++) {
      const line = arrowLine(list[i], laid, X, frame);
      if (!line) continue;
      const reach = arrowReach(line);
      cutAt(reach.x, reach.y);
    }
  }
  return cuts;
}

/** `cls` (a class name, a list of them, nested or with falsy holes) holds `name`? Allocates nothing. */
function hasClass(cls, name) {
  if (!cls) return false;
  if (typeof cls === "string") return cls === name;
  for (const c of cls) if (hasClass(c, name)) return true;
  return false;
}

/** Setters of the canvas's fill, stroke and alpha that skip a value already set (each set parses it again). */
function penOf(ctx) {
  let fill = null;
  let stroke = null;
  let alpha = null;
  return {
    fill(value) { if (value !== fill) { ctx.fillStyle = value; fill = value; } },
    stroke(value) { if (value !== stroke) { ctx.strokeStyle = value; stroke = value; } },
    alpha(value) { if (value !== alpha) { ctx.globalAlpha = value; alpha = value; } },
  };
}

function roundRect(ctx, x, y, w, h, r) {
  ctx.beginPath();
  if (ctx.roundRect) ctx.roundRect(x, y, w, h, r);
  else ctx.rect(x, y, w, h);
}

// ---- zoom and pan --------------------------------------------------------------------------------------

/** Zoom to `factor` × the span shown (< 1: in), about the axis fraction `at`; the view stays inside the run. */
export function zoomView(view, factor, at) {
  const span = Math.min(1, Math.max(MIN_SPAN_FRACTION, (view.to - view.from) * factor));
  let from = at - (at - view.from) * (span / (view.to - view.from));
  from = Math.min(Math.max(0, from), 1 - span);
  return { from, to: from + span };
}

/** Move the view by `delta` (a fraction of the whole axis), inside the run. */
export function panView(view, delta) {
  const span = view.to - view.from;
  const from = Math.min(Math.max(0, view.from + delta), 1 - span);
  return { from, to: from + span };
}

function bindZoom(canvas) {
  canvas.gantt = { view: { from: 0, to: 1 } };
  const set = (view) => {
    canvas.gantt.view = view;
    if (view.from > 0 || view.to < 1) canvas.dataset.zoom = "in";
    else delete canvas.dataset.zoom;
    paintChart(canvas);
  };
  /** The axis fraction under a client x. */
  const fractionAt = (clientX) => {
    const { frame, view } = canvas.gantt;
    const x = clientX - canvas.getBoundingClientRect().left;
    const f = Math.min(1, Math.max(0, (x - frame.left) / frame.plot));
    return view.from + f * (view.to - view.from);
  };
  canvas.addEventListener("wheel", (event) => {
    if (!event.deltaY) return;
    event.preventDefault();
    set(zoomView(canvas.gantt.view, Math.exp(event.deltaY * 0.002), fractionAt(event.clientX)));
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("pointerdown", (event) => {
    drag = { x: event.clientX, view: canvas.gantt.view };
    canvas.setPointerCapture?.(event.pointerId);
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const { frame } = canvas.gantt;
    const span = drag.view.to - drag.view.from;
    set(panView(drag.view, (-(event.clientX - drag.x) / frame.plot) * span));
  });
  const stop = () => { drag = null; };
  canvas.addEventListener("pointerup", stop);
  canvas.addEventListener("pointercancel", stop);
  canvas.addEventListener("keydown", (event) => {
    const { view } = canvas.gantt;
    const span = view.to - view.from;
    const middle = (view.from + view.to) / 2;
    const far = event.shiftKey ? 0.5 : 0.15;
    const action = {
      "+": () => zoomView(view, 0.5, middle), "=": () => zoomView(view, 0.5, middle), "-": () => zoomView(view, 2, middle),
      0: () => ({ from: 0, to: 1 }), ArrowLeft: () => panView(view, -far * span), ArrowRight: () => panView(view, far * span),
    }[event.key];
    if (!action) return;
    event.preventDefault();             // the page's own ← and → (a step) wait while the chart has the focus
    event.stopPropagation();
    set(action());
  });
  canvas.gantt.titleAt = (clientX, clientY) => titleAt(canvas, clientX, clientY);
}

/** The title of the block under a client point, or null. */
function titleAt(canvas, clientX, clientY) {
  const { layout, frame, axis, view } = canvas.gantt;
  const box = canvas.getBoundingClientRect();
  const x = clientX - box.left;
  const y = clientY - box.top;
  const X = xScale(frame, shownAxis(axis, view));
  for (const { lanes } of layout.laid) {
    for (const lane of lanes) {
      if (y < lane.y || y > lane.y + lane.h) continue;
      let best = null;
      for (const b of lane.blocks) {
        const x0 = X(b.t0);
        const x1 = b.tick ? x0 : X(b.t1);
        if (x >= Math.min(x0, x1 - 2) - 2 && x <= Math.max(x1, x0 + 2) + 2) best = b;
      }
      return best?.title || null;
    }
  }
  return null;
}
