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

/**
 * The chart on `canvas` (kept from step to step: its zoom stays). Arguments as gantt.js's ganttSvg.
 * Returns the canvas.
 */
export function ganttCanvas(canvas, { rows, arrows = [], axis, frame, now = null, axisLabel = "time since the first block (ms)",
                                      className = "", ariaLabel = "timeline of each rank", gap = 0.45,
                                      tickText = (t, origin) => formatMs(t - origin) }) {
  const rem = frame.rem;
  const layout = layRows(rows, rem, gap);
  if (!canvas.gantt) bindZoom(canvas);
  Object.assign(canvas.gantt, { rows, arrows, axis, frame, now, axisLabel, gap, layout, tickText });
  canvas.className = ["gantt", "gantt-canvas", className].filter(Boolean).join(" ");
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", ariaLabel);
  canvas.tabIndex = 0;
  paintChart(canvas);
  return canvas;
}

function paintChart(canvas) {
  const { rows, arrows, axis, frame, now, axisLabel, layout, view, tickText } = canvas.gantt;
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
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const c = palette();
  const shown = shownAxis(axis, view);
  const X = xScale(frame, shown);
  const font = (weight, size) => `${weight} ${size}px system-ui, sans-serif`;

  // rows: background, label chip, what the row holds, the right-hand number
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
    if (row.right !== undefined && row.right !== null) {
      ctx.textAlign = "left";
      ctx.fillStyle = c.ink;
      ctx.font = font(700, 0.78 * rem);
      ctx.fillText(String(row.right), frame.right + 0.5 * rem, (y0 + y1) / 2);
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

  // blocks, clipped to the plot. A big run's chart paints thousands at each move: the canvas's state (a
  // colour, the alpha, the font) is set only when it changes, and nothing is allocated per block.
  ctx.save();
  ctx.beginPath();
  ctx.rect(frame.left, 0, frame.plot, height);
  ctx.clip();
  const charPx = 0.84 * rem * 0.62;
  const minTextPx = charPx + 2;           // narrower than one character: no text to fit
  const current = [];
  const pen = penOf(ctx);
  ctx.font = font(800, 0.84 * rem);
  ctx.textAlign = "center";
  for (const { lanes } of laid) {
    for (const lane of lanes) {
      pen.alpha(1);
      pen.stroke(c.line);
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(frame.left, lane.y + lane.h);
      ctx.lineTo(frame.right, lane.y + lane.h);
      ctx.stroke();
      const bottom = lane.y + lane.h;
      for (const b of lane.blocks) {
        if (b.tick) {
          const x = X(b.t0);
          if (x < frame.left || x > frame.right) continue;
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
        const x1 = Math.min(frame.right + 2, X(b.t1));
        if (x1 < frame.left || x0 > frame.right) continue;
        const w = Math.max(x1 - x0, 1.5);
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
        if (isCurrent || hasClass(b.cls, "open")) current.push({ x0, w, lane, open: !isCurrent });
        const text = w >= minTextPx ? fitText(b, w, charPx) : null;
        if (text) {
          pen.fill(paint(b.ink, "white") || "white");
          ctx.fillText(text, x0 + w / 2, lane.y + lane.h / 2);
        }
      }
    }
  }
  ctx.globalAlpha = 1;
  for (const { x0, w, lane, open } of current) {      // outlined above their neighbours
    ctx.strokeStyle = c.ink;
    ctx.lineWidth = open ? 1.5 : 3;
    ctx.setLineDash(open ? [3, 2] : []);
    ctx.strokeRect(x0, lane.y, w, lane.h);
  }
  ctx.setLineDash([]);
  paintArrows(ctx, arrows, laid, X, frame, c);
  ctx.restore();

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

/** The arrows in view, thinned: per pair of rows, one per few pixels (the current ones always). */
function paintArrows(ctx, arrows, laid, X, frame, c) {
  const taken = new Set();
  const drawn = [];
  for (const a of arrows) {
    const from = laid[a.from.row];
    const to = laid[a.to.row];
    if (!from || !to) continue;
    const x0 = X(a.from.t);
    const x1 = X(a.to.t);
    if (Math.max(x0, x1) < frame.left || Math.min(x0, x1) > frame.right) continue;
    const current = hasClass(a.cls, "current");
    const slot = (a.from.row * 4096 + a.to.row) * 1e7 + Math.round(x0 / ARROW_SPACING_PX) + 1e6;   // a number: no string per arrow
    if (!current && taken.has(slot)) continue;
    taken.add(slot);
    const down = a.to.row > a.from.row;
    drawn.push({ x0, x1, y0: down ? from.y1 : from.y0, y1: down ? to.y0 : to.y1, current });
  }
  for (const current of [false, true]) {      // a path per arrow: one path of them all rasterises several times slower
    ctx.strokeStyle = current ? c.ink : "rgba(71, 85, 105, 0.45)";
    ctx.fillStyle = current ? c.ink : c.soft;
    ctx.lineWidth = current ? 2.5 : 1.2;
    const head = current ? 7 : 5;
    for (const d of drawn) {
      if (d.current !== current) continue;
      ctx.beginPath();
      ctx.moveTo(d.x0, d.y0);
      ctx.lineTo(d.x1, d.y1);
      ctx.stroke();
      const angle = Math.atan2(d.y1 - d.y0, d.x1 - d.x0);
      ctx.beginPath();
      ctx.moveTo(d.x1, d.y1);
      ctx.lineTo(d.x1 - head * Math.cos(angle - 0.45), d.y1 - head * Math.sin(angle - 0.45));
      ctx.lineTo(d.x1 - head * Math.cos(angle + 0.45), d.y1 - head * Math.sin(angle + 0.45));
      ctx.fill();
    }
  }
  return drawn.length;
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
