/** The caption of the event at the cursor: which rank did what, in words. */

import { fill, h } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { describe } from "paralab/replay.js";

export function renderNow(container, state) {
  const e = state.event;
  if (!e) {
    fill(container, h("span", { class: "empty" }, "No event yet."));
    return;
  }
  fill(container,
    h("span", { class: "now-seq" }, `#${e.seq}`),
    h("span", { class: "now-dot", style: { background: rankColour(e.rank) }, "aria-hidden": "true" }),
    h("span", { class: "now-text" }, describe(e)));
}
