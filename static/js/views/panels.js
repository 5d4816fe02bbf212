/**
 * The lesson page's picture panels, made from the view registry: one <section class="panel"> per
 * view, in the registry's order, and at each drawing the views whose data the log holds shown and
 * drawn, the others hidden. One redraw strategy for all: each view draws the state at the cursor and
 * keeps what did not change (see dom.js).
 */

import { h } from "paralab/dom.js";
import { VIEWS, viewsFor } from "paralab/views/registry.js";

/** One hidden panel per view, placed after `anchor` in its parent; returns id → {view, section, body}. */
export function mountPanels(anchor, views = VIEWS) {
  const panels = new Map();
  let last = anchor;
  for (const view of views) {
    const heading = h("h2", { id: `h-${view.id}` }, view.note ? [`${view.title} `, h("span", { class: "panel-note" }, view.note)] : view.title);
    const body = h("div", { id: view.id });
    const section = h("section", { id: `${view.id}-panel`, class: ["panel", view.className], "aria-labelledby": heading.id, hidden: !view.always },
      heading, body);
    last.after(section);
    last = section;
    panels.set(view.id, { view, section, body });
  }
  return panels;
}

/**
 * Show the panels whose view's data `contents` (what the whole log holds) has, and draw each from
 * `state`. ctx: {runId, worldSize, params, contents}.
 */
export function drawPanels(panels, state, ctx) {
  const shown = new Set(viewsFor(ctx.contents, { ran: Boolean(ctx.runId) }));
  for (const { view, section, body } of panels.values()) {
    if (!shown.has(view)) {
      section.hidden = true;
      continue;
    }
    section.hidden = false;          // visible first: the drawings size themselves to the panel's width
    section.hidden = view.render(body, state, ctx) === false;
  }
}
