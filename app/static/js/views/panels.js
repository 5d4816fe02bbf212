/**
 * The lesson page's picture panels, made from the view registry: one <section class="panel"> per
 * view, in the registry's order, and at each drawing the views whose data the log holds shown and
 * drawn, the others hidden. One redraw strategy for all: each view draws the state at the cursor and
 * keeps what did not change (see dom.js).
 *
 * A step draws at once only the panels on screen (or just shown); those scrolled out of view are drawn
 * when the browser is idle, or as soon as they scroll in. On a run of thousands of events the panels
 * below the fold cost as much as the one the viewer looks at, and a step must fit in a frame.
 */

import { h } from "paralab/dom.js";
import { timed } from "paralab/timings.js";
import { VIEWS, viewsFor } from "paralab/views/registry.js";

const IDLE_WAIT_MS = 500;       // the longest an off-screen panel waits for an idle moment
const SIGHT_MARGIN_PX = 120;    // a panel this near the visible part of the stage counts as on screen

/** One hidden panel per view, placed after `anchor` in its parent; returns id → {view, section, body}. */
export function mountPanels(anchor, views = VIEWS) {
  const panels = new Map();
  const deferred = deferredDrawing();
  let last = anchor;
  for (const view of views) {
    const heading = h("h2", { id: `h-${view.id}` }, view.note ? [`${view.title} `, h("span", { class: "panel-note" }, view.note)] : view.title);
    const body = h("div", { id: view.id });
    const section = h("section", { id: `${view.id}-panel`, class: ["panel", view.className], "aria-labelledby": heading.id, hidden: !view.always },
      heading, body);
    last.after(section);
    last = section;
    panels.set(view.id, { view, section, body, deferred });
    deferred.watch(section);
  }
  return panels;
}

/**
 * Show the panels whose view's data `contents` (what the whole log holds) has, and draw each from
 * `state`. ctx: {runId, worldSize, params, contents}.
 */
export function drawPanels(panels, state, ctx) {
  const shown = new Set(viewsFor(ctx.contents, { ran: Boolean(ctx.runId) }));
  const later = [];
  const deferred = panels.values().next().value?.deferred;
  const opening = deferred?.opens(ctx.runId, state.total > 0);
  // The focus view: one panel fills the window, the others lie under it (on screen to the observer).
  const focusView = document.body.classList.contains("focus-view");
  for (const panel of panels.values()) {
    if (!shown.has(panel.view)) {
      panel.section.hidden = true;
      continue;
    }
    const justShown = panel.section.hidden;
    panel.section.hidden = false;
    // A panel just shown has not been seen by the observer: drawn at once, unless the run is opening (every
    // panel shows at once then, on a page with nothing drawn yet: its place is quick to know).
    const now = focusView ? panel.section.classList.contains("focused")
      : justShown ? !opening || inSight(panel.section) : deferred.onScreen(panel.section);
    if (now) timed(panel.view.id, () => draw(panel, state, ctx));
    else later.push(panel);
  }
  deferred?.due(later, state, ctx);
}

/** Whether `section` lies in what the stage shows, or within the observer's margin of it (a layout). */
function inSight(section) {
  const box = section.getBoundingClientRect();
  const stage = section.closest(".stage")?.getBoundingClientRect();
  const top = Math.max(stage?.top ?? 0, 0) - SIGHT_MARGIN_PX;
  const bottom = Math.min(stage?.bottom ?? innerHeight, innerHeight) + SIGHT_MARGIN_PX;
  return box.bottom > top && box.top < bottom;
}

function draw({ view, section, body }, state, ctx) {
  delete section.dataset.stale;
  section.hidden = false;          // visible first: the drawings size themselves to the panel's width
  section.hidden = view.render(body, state, ctx) === false;
}

/**
 * The panels whose last drawing waits: which sections are on screen (an IntersectionObserver, so no
 * layout is forced to know it), and the panels due, drawn one per idle moment or when they scroll in.
 */
function deferredDrawing() {
  const visible = new Set();
  let pending = { panels: [], state: null, ctx: null };
  let scheduled = false;
  let drawnRun;
  const drawPending = (panel) => {
    pending.panels = pending.panels.filter((p) => p !== panel);
    draw(panel, pending.state, pending.ctx);
  };
  const observer = typeof IntersectionObserver === "function" ? new IntersectionObserver((entries) => {
    for (const { target, isIntersecting } of entries) {
      if (isIntersecting) visible.add(target);
      else visible.delete(target);
      const panel = isIntersecting && pending.panels.find((p) => p.section === target);
      if (panel) drawPending(panel);
    }
  }, { rootMargin: `${SIGHT_MARGIN_PX}px` }) : null;
  const idle = (fn) => (window.requestIdleCallback ? requestIdleCallback(fn, { timeout: IDLE_WAIT_MS }) : setTimeout(fn, 50));
  function drawOne() {
    scheduled = false;
    const next = pending.panels[0];
    if (!next) return;
    drawPending(next);
    if (pending.panels.length) schedule();
  }
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    idle(drawOne);
  }
  return {
    watch: (section) => observer?.observe(section),
    onScreen: (section) => !observer || visible.has(section),
    /** Whether this drawing is the first of run `runId` with events (the last was another run's, or had none). */
    opens(runId, hasEvents) {
      const first = runId !== drawnRun;
      if (hasEvents) drawnRun = runId;
      return first && Boolean(observer);
    },
    /** These panels are to show `state`, once the browser has a moment (the latest call wins). */
    due(panels, state, ctx) {
      for (const panel of panels) panel.section.dataset.stale = "";   // what a test waits on (none left: all drawn)
      pending = { panels, state, ctx };
      if (panels.length) schedule();
    },
  };
}
