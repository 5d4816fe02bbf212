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
export function ganttCanvas(canvas, { rows, arrows = [], settledArrows = 0, axis, frame, now = null, axisLabel = "time since the first block (ms)",
                                      className = "", ariaLabel = "timeline of each rank", gap = 0.45,
                                      tickText = defaultTickText }) {
  const rem = frame.rem;
  const layout = layRows(rows, rem, gap);
  if (!canvas.gantt) bindZoom(canvas);
  Object.assign(canvas.gantt, { rows, arrows, settledArrows, axis, frame, now, axisLabel, gap, layout, tickText });
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
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const shown = shownAxis(axis, view);
  const X = xScale(frame, shown);
  const c = palette();
  const base = settledBase(canvas, dpr);
  ctx.globalAlpha = 1;
  if (base) ctx.drawImage(base.bitmap, 0, 0);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  if (!base) paintFrame(ctx, canvas.gantt, shown, X);

  // each row's number on the right (it changes as the run goes: not part of the kept painting)
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  ctx.fillStyle = c.ink;
  ctx.font = font(700, 0.78 * rem);
  for (const { row, y0, y1 } of laid) {
    if (row.right !== undefined && row.right !== null) ctx.fillText(String(row.right), frame.right + 0.5 * rem, (y0 + y1) / 2);
  }

  ctx.save();
  clipToPlot(ctx, frame, height);
  const current = paintBlocks(ctx, laid, X, frame, base ? base.painted.map((blocks) => blocks.length) : null);
  ctx.globalAlpha = 1;
  for (const { x0, w, lane, open } of current) {      // outlined above their neighbours
    ctx.strokeStyle = c.ink;
    ctx.lineWidth = open ? 1.5 : 3;
    ctx.setLineDash(open ? [3, 2] : []);
    ctx.strokeRect(x0, lane.y, w, lane.h);
  }
  ctx.setLineDash([]);
  if (base) {
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(base.arrowsBitmap, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }
  paintArrows(ctx, arrows, laid, X, frame, c, base ? base.arrows.length : 0, base?.taken);
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
  // Made when the browser is idle; soon (within SETTLE_WAIT_MS) while the viewer steps (the cursor's time moved a
  // little): after a jump the next move may go anywhere.
  const stepping = now !== null && canvas.gantt.lastNow !== undefined && Math.abs(now - canvas.gantt.lastNow) <= STEP_SPAN * (axis.end - axis.start);
  canvas.gantt.lastNow = now ?? undefined;
  if (!base || base.behind) keepSettled(canvas, stepping);
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

/**
 * The lanes' blocks, clipped to the plot (the caller's clip), each lane's from `from[lane]` (its first block when
 * null) to `to[lane]` (its last when null); returns the current and open ones, to be outlined. A big run's chart
 * paints thousands at a move: the canvas's state (a colour, the alpha, the font) is set only when it changes, and
 * nothing is allocated per block.
 */
function paintBlocks(ctx, laid, X, frame, from = null, to = null) {
  const rem = frame.rem;
  const c = palette();
  const charPx = 0.84 * rem * 0.62;
  const minTextPx = charPx + 2;           // narrower than one character: no text to fit
  const current = [];
  const pen = penOf(ctx);
  ctx.font = font(800, 0.84 * rem);
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  let k = -1;
  for (const { lanes } of laid) {
    for (const lane of lanes) {
      k += 1;
      const bottom = lane.y + lane.h;
      const blocks = lane.blocks;
      for (let i = from ? from[k] : 0, end = to ? to[k] : blocks.length; i < end; i++) {
        const b = blocks[i];
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
  return current;
}

// ---- the settled painting ------------------------------------------------------------------------------
// A lane may say how many of its first blocks are settled (`lane.settled`: the same block objects, unchanged, at
// every later place of the run — a pipeline's spans that ended a while before the cursor). The chart then keeps a
// painting of its frame and those blocks (made when the browser is idle, as an ImageBitmap), and a move copies it
// and paints only the blocks after them: a few hundred near the cursor, not thousands. The blocks are painted in
// the order a whole painting paints them (each lane's in turn; lanes do not overlap), so the picture is the same.
// The painting serves a move only where the chart's frame is the same (size, axis, zoom, rows) and each lane starts
// with the blocks it holds (the same objects); elsewhere — a move back past them, a new axis — the chart is painted
// whole and a new one is made when idle.

const SETTLED_BEHIND = 256;   // settled blocks not yet in the painting before it is brought up to date (when idle)
const STEP_SPAN = 0.02;        // a move of the cursor's time by at most this share of the axis is a step
const SETTLE_WAIT_MS = 100;    // stepping, the painting is made by then even if the browser is never idle

/** The chart's frame, as a key: a settled painting serves only the same one. */
function frameKey(g, dpr) {
  const { laid, height } = g.layout;
  return JSON.stringify([dpr, g.frame, height, g.axis, g.view, g.axisLabel, g.gap, g.tickText === defaultTickText ? null : String(g.tickText),
    laid.map(({ row, y0, y1, lanes }) => [row.rank, row.label, row.sub, row.badge, y0, y1, lanes.length])]);
}

/** The chart's settled painting if it serves its current rows (`behind`: it lacks many settled blocks), else null. */
function settledBase(canvas, dpr) {
  const g = canvas.gantt;
  const base = g.base;
  if (!base?.bitmap || base.key !== frameKey(g, dpr)) return null;
  const lanes = g.layout.laid.flatMap((l) => l.lanes);
  if (lanes.length !== base.painted.length) return null;
  let behind = 0;
  for (let k = 0; k < lanes.length; k++) {
    const painted = base.painted[k];
    const blocks = lanes[k].blocks;
    if (blocks.length < painted.length) return null;
    for (let i = 0; i < painted.length; i++) if (blocks[i] !== painted[i]) return null;
    behind += Math.max(0, (lanes[k].settled ?? 0) - painted.length);
  }
  if (g.arrows.length < base.arrows.length) return null;
  for (let i = 0; i < base.arrows.length; i++) if (g.arrows[i] !== base.arrows[i]) return null;
  base.behind = behind + (g.settledArrows - base.arrows.length) > SETTLED_BEHIND;
  return base;
}

/** Make (or bring up to date) the settled painting of the chart's latest rows when the browser is idle (`soon`: by
 *  SETTLE_WAIT_MS at the latest). */
function keepSettled(canvas, soon) {
  const g = canvas.gantt;
  if (!(g.settledArrows > 0 || g.layout.laid.some((l) => l.lanes.some((lane) => lane.settled > 0)))) return;
  if (g.settling && (g.settling.soon || !soon)) return;
  if (g.settling) window.cancelIdleCallback?.(g.settling.handle);
  const idle = window.requestIdleCallback || ((fn) => setTimeout(fn, 50));
  g.settling = { soon, handle: idle(() => {
    const dpr = window.devicePixelRatio || 1;
    const key = frameKey(g, dpr);
    const lanes = g.layout.laid.flatMap((l) => l.lanes);
    const kept = settledBase(canvas, dpr) ? g.base : null;     // extended, or made anew
    const layer = kept?.layer ?? document.createElement("canvas");
    const lctx = layer.getContext("2d");
    const { frame, layout } = g;
    const shown = shownAxis(g.axis, g.view);
    const X = xScale(frame, shown);
    if (!kept) {
      layer.width = canvas.width;
      layer.height = canvas.height;
      lctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      paintFrame(lctx, g, shown, X);
    }
    const from = lanes.map((lane, k) => (kept ? kept.painted[k].length : 0));
    const to = lanes.map((lane, k) => Math.max(from[k], Math.min(lane.settled ?? 0, lane.blocks.length)));
    lctx.save();
    clipToPlot(lctx, frame, layout.height);
    paintBlocks(lctx, layout.laid, X, frame, from, to);
    lctx.restore();
    const painted = lanes.map((lane, k) => lane.blocks.slice(0, to[k]));
    // the settled arrows on a layer of their own: every arrow is drawn over every block
    const arrowsLayer = kept?.arrowsLayer ?? document.createElement("canvas");
    const actx = arrowsLayer.getContext("2d");
    if (!kept) {
      arrowsLayer.width = canvas.width;
      arrowsLayer.height = canvas.height;
      actx.setTransform(dpr, 0, 0, dpr, 0, 0);
    }
    const arrowsFrom = kept ? kept.arrows.length : 0;
    const arrowsTo = Math.max(arrowsFrom, Math.min(g.settledArrows, g.arrows.length));
    actx.save();
    clipToPlot(actx, frame, layout.height);
    const taken = paintArrows(actx, g.arrows, layout.laid, X, frame, palette(), arrowsFrom, kept?.taken, arrowsTo);
    actx.restore();
    const arrows = g.arrows.slice(0, arrowsTo);
    const allTaken = kept ? new Set([...kept.taken, ...taken]) : taken;
    Promise.all([createImageBitmap(layer), createImageBitmap(arrowsLayer)]).then(([bitmap, arrowsBitmap]) => {
      g.base?.bitmap?.close?.();
      g.base?.arrowsBitmap?.close?.();
      g.base = { key, layer, bitmap, painted, arrowsLayer, arrowsBitmap, arrows, taken: allTaken, behind: false };
      g.settling = null;
    }, () => { g.settling = null; });
  }, soon ? { timeout: SETTLE_WAIT_MS } : {}) };
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

/** The arrows in view, thinned: per pair of rows, one per few pixels (the current ones always); from the
 *  `start`th to before the `end`th, after those whose places `before` holds. Returns the places taken. */
function paintArrows(ctx, arrows, laid, X, frame, c, start = 0, before = null, end = arrows.length) {
  const taken = new Set();
  const drawn = [];
  for (let i = start; i < end; i++) {
    const a = arrows[i];
    const from = laid[a.from.row];
    const to = laid[a.to.row];
    if (!from || !to) continue;
    const x0 = X(a.from.t);
    const x1 = X(a.to.t);
    if (Math.max(x0, x1) < frame.left || Math.min(x0, x1) > frame.right) continue;
    const current = hasClass(a.cls, "current");
    const slot = (a.from.row * 4096 + a.to.row) * 1e7 + Math.round(x0 / ARROW_SPACING_PX) + 1e6;   // a number: no string per arrow
    if (!current && (taken.has(slot) || before?.has(slot))) continue;
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
  return taken;
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
