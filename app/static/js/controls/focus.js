/**
 * The focus view: one picture panel fills the window above the scrubber, in large type, for the back
 * of a hall; every key still works (a step redraws it at its new size). "Focus" in a panel's tools, or
 * Z (the panel focused last, else the first one shown), enters it; Z, Esc or the button again leaves.
 * Each change is told as a `paralab:focus` event on the document (detail: the panel, or null), so that
 * a room's presenter can share it.
 */

import { h } from "paralab/dom.js";

let last = null;          // the panel focused last

/** A panel's name for others (a room's followers): its id, else its picture's. */
export function panelName(panel) {
  return panel ? panel.id || panel.querySelector(":scope > div[id]")?.id || null : null;
}

/** The panel named `name` (panelName's inverse), or null. */
export function panelNamed(name) {
  const el = name ? document.getElementById(name) : null;
  return el?.closest(".stage > .panel") || null;
}

/** The panel in focus, or null. */
export function focusedPanel() {
  return document.querySelector(".stage > .panel.focused");
}

/** Put `panel` in focus (null: leave the focus view). */
export function setFocus(panel) {
  const was = focusedPanel();
  was?.classList.remove("focused");
  was?.querySelector(".focus-toggle")?.setAttribute("aria-pressed", "false");
  document.body.classList.toggle("focus-view", Boolean(panel));
  if (panel) enter(panel);
  if (was !== panel) document.dispatchEvent(new CustomEvent("paralab:focus", { detail: { panel } }));
}

function enter(panel) {
  last = panel;
  fitAboveScrubber(panel);
  panel.classList.add("focused");
  panel.querySelector(".focus-toggle")?.setAttribute("aria-pressed", "true");
  panel.scrollTop = 0;
}

/** The panel ends where the scrubber begins (its height depends on the width: its controls wrap). */
function fitAboveScrubber(panel) {
  const scrubber = document.getElementById("scrubber");
  panel.style.setProperty("--focus-bottom", `${scrubber ? scrubber.offsetHeight : 0}px`);
}

window.addEventListener("resize", () => {
  const panel = focusedPanel();
  if (panel) fitAboveScrubber(panel);
});

/** The "Focus" button of a panel's tools. */
export function focusButton(panel) {
  return h("button", { type: "button", class: "tool focus-toggle", "aria-pressed": "false", title: "Fill the screen with this picture (Z; Esc leaves)",
                       onclick: () => setFocus(focusedPanel() === panel ? null : panel) }, "Focus");
}

/** Z and Esc; keys typed into a form field are left alone. */
export function bindFocusKeys() {
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    const field = event.target instanceof HTMLElement && event.target.matches("input:not([type=range]), select, textarea");
    if (field) return;
    if (event.key === "Escape" && focusedPanel()) {
      event.preventDefault();
      setFocus(null);
    } else if (event.key === "z" || event.key === "Z") {
      event.preventDefault();
      const shown = [...document.querySelectorAll(".stage > .panel")].filter((p) => !p.hidden && p.querySelector(".focus-toggle"));
      setFocus(focusedPanel() ? null : (last && !last.hidden ? last : shown[0]) || null);
    }
  });
}
