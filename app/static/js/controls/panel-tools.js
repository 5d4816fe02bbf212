/**
 * Tools on each picture's panel: "Table" (the state at the cursor as a table: always there for screen
 * readers, shown on demand), "PNG" and "SVG" (save the picture for slides); and, beside the scrubber,
 * "Export HTML": the whole run as one file that replays offline (GET /api/runs/{id}/export.html).
 * A panel gets its tools when it has a heading and a picture container (`<div id>`) as children.
 */

import { cacheOf, changed, h, place } from "paralab/dom.js";
import { t } from "paralab/i18n.js";
import { download, picturePng, pictureSvg } from "paralab/controls/picture-export.js";
import { bindFocusKeys, focusButton } from "paralab/controls/focus.js";
import { TABLES } from "paralab/views/tables.js";
import { here } from "paralab/root.js";

const SHOWN_KEY = "paralab:tables";

function shownTables() {
  try {
    return new Set(JSON.parse(localStorage.getItem(SHOWN_KEY) || "[]"));
  } catch {
    return new Set();
  }
}

function remember(id, shown) {
  const set = shownTables();
  if (shown) set.add(id);
  else set.delete(id);
  try {
    localStorage.setItem(SHOWN_KEY, JSON.stringify([...set]));
  } catch {
    /* the toggle still works on this page */
  }
}

function fileName(store, id, ext) {
  const { run, log, cursor } = store.state;
  const seq = cursor >= 0 ? log[cursor].seq : 0;
  return ["paralab", run?.lesson, id, run ? `seq${seq}` : null].filter(Boolean).join("-") + `.${ext}`;
}

function panelTools(panel, picture, store, { exportable }) {
  const id = picture.id;
  const heading = panel.querySelector(":scope > h2");
  const title = heading ? heading.childNodes[0]?.textContent.trim() || id : id;
  const tools = h("div", { class: "panel-tools", role: "group", "aria-label": t("{panel}: tools", { panel: title }) });
  if (TABLES[id]) {
    const shown = shownTables().has(id);
    // shown, it scrolls sideways from the keyboard too (a focus stop); hidden, it is for screen readers alone
    const box = h("div", { class: ["state-table", !shown && "visually-hidden"], id: `table-${id}`, "data-for": id,
                           tabindex: shown ? "0" : null });
    picture.after(box);
    const toggle = h("button", { type: "button", class: "tool table-toggle", "aria-pressed": String(shown), "aria-controls": box.id,
                                 title: "Show this picture as a table" }, "Table");
    toggle.addEventListener("click", () => {
      const show = toggle.getAttribute("aria-pressed") !== "true";
      toggle.setAttribute("aria-pressed", String(show));
      box.classList.toggle("visually-hidden", !show);
      show ? box.setAttribute("tabindex", "0") : box.removeAttribute("tabindex");
      remember(id, show);
    });
    tools.append(toggle);
  }
  if (exportable) {
    tools.append(
      h("button", { type: "button", class: "tool", "data-export": "png", title: "Save this picture as PNG",
                    onclick: async () => download(await picturePng(picture), fileName(store, id, "png")) }, "PNG"),
      h("button", { type: "button", class: "tool", "data-export": "svg", title: "Save this picture as SVG",
                    onclick: () => download(new Blob([pictureSvg(picture).text], { type: "image/svg+xml" }), fileName(store, id, "svg")) }, "SVG"));
  }
  tools.append(focusButton(panel));
  panel.prepend(tools);
}

/**
 * Give every picture panel under `root` its tools, and the scrubber its "Export HTML" link.
 * `exportRun`: false where the run cannot be fetched again (an exported file).
 */
export function bindPanelTools(store, { root = document, exportRun = true } = {}) {
  bindFocusKeys();
  for (const panel of root.querySelectorAll(".stage > .panel")) {
    const picture = panel.querySelector(":scope > div[id]");
    if (!picture || !panel.querySelector(":scope > h2")) continue;
    panelTools(panel, picture, store, { exportable: true });
  }
  const scrubber = root.querySelector("#scrubber");
  if (!exportRun || !scrubber) return;
  const link = h("a", { class: "export-run button-link", hidden: true, title: "Save this run as one HTML file that replays offline" }, "Export HTML");
  const speed = scrubber.querySelector(".speed");
  if (speed) speed.after(link);
  else scrubber.append(link);
  const update = () => {
    const run = store.state.run;
    link.hidden = !run;
    if (run) {
      link.href = here(`/api/runs/${encodeURIComponent(run.id)}/export.html`);
      link.setAttribute("download", `paralab-${run.lesson}-${run.id}.html`);
    }
  };
  store.on("run", update);
  update();
}

/**
 * Fill each shown panel's table(s) from the state at the cursor (cheap: redrawn only when the step
 * changes, and a row that reads as before stays as it is). A hidden panel's table waits until
 * the panel is shown (nobody, screen readers included, can read it before); a table not toggled on
 * (there for screen readers) is brought up to date when the browser is idle.
 * ctx: {runId, worldSize, lesson, params}.
 */
export function renderTables(state, ctx) {
  const later = [];
  for (const [id, make] of Object.entries(TABLES)) {
    const box = document.getElementById(`table-${id}`);
    if (!box || box.closest(".panel")?.hidden) continue;
    if (box.classList.contains("visually-hidden")) later.push([box, make]);   // read by screen readers: when idle
    else drawTable(box, make, state, ctx);
  }
  hiddenTables = { later, state, ctx };
  if (later.length && !hiddenTablesDue) {
    hiddenTablesDue = true;
    if (window.requestIdleCallback) requestIdleCallback(drawHiddenTables, { timeout: 500 });
    else setTimeout(drawHiddenTables, 50);
  }
}

// The tables not shown (each a row per span on a big run: thousands) are brought up to date when the
// browser is idle, with the latest step's state, so that a step is drawn within its frame.
let hiddenTables = { later: [], state: null, ctx: null };
let hiddenTablesDue = false;
function drawHiddenTables() {
  hiddenTablesDue = false;
  const { later, state, ctx } = hiddenTables;
  for (const [box, make] of later) drawTable(box, make, state, ctx);
  hiddenTables = { later: [], state: null, ctx: null };
}

function drawTable(box, make, state, ctx) {
  if (!changed(box, `${ctx.runId}|${state.index}`)) return;
  const cache = cacheOf(box);
  const tables = state.index >= 0 ? [make(state, { ...ctx, cache })].flat().filter(Boolean) : [];
  place(box, tables.length ? tables : [cache.get("empty", () => h("p", { class: "empty" }, "Nothing at this step."))]);
  cache.done();
}
