/**
 * The lesson's source with line numbers. The line of the current event's `site` is highlighted and
 * scrolled into view; a dot per rank in the gutter marks where each rank last called into torch.distributed
 * (ringed: it waits at a step-mode gate before that call; pulsing: it is inside the call).
 */

import { changed, fill, h, morph, sizeOf } from "paralab/dom.js";
import { t } from "paralab/i18n.js";
import { rankColour } from "paralab/palette.js";
import { highlightPython } from "paralab/views/python.js";

let chosenPath = null;   // a file the viewer picked by its tab; the site's file wins when it changes

function shortName(path) {
  return path.split("/").slice(-2).join("/");
}

export function renderSource(container, state, { sources, onPick }) {
  if (!sources.length) {
    fill(container, h("h2", { id: "h-source" }, "Source"), h("p", { class: "empty" }, "No source."));
    return;
  }
  const site = state.site && sources.some((f) => f.path === state.site.path) ? state.site : null;
  const path = site ? site.path : chosenPath && sources.some((f) => f.path === chosenPath) ? chosenPath : sources[0].path;
  const file = sources.find((f) => f.path === path);

  let tabs = container.querySelector(".source-tabs");
  let code = container.querySelector(".source-code");
  let where = container.querySelector(".source-where");
  if (changed(container, sources.map((f) => f.path).join("|"))) {
    tabs = h("div", { class: "source-tabs", role: "tablist", "aria-label": "source files" });
    where = h("p", { class: "source-where", "aria-live": "polite" });
    code = h("div", { class: "source-code", tabindex: "0", "aria-label": t("lesson source") });
    fill(container, h("div", { class: "source-head" }, h("h2", { id: "h-source" }, "Source"), tabs), where, code);
  }
  if (changed(tabs, path)) {
    fill(tabs, sources.map((f) => h("button", {
      type: "button", role: "tab", class: "source-tab", "aria-selected": String(f.path === path), "data-path": f.path,
      onclick: () => {
        chosenPath = f.path;
        onPick?.();
      },
    }, shortName(f.path))));
  }

  if (code.dataset.path !== path) {
    code.dataset.path = path;
    delete code.dataset.shown;
    const lines = highlightPython(file.text);
    // As wide as its longest line, said outright: a width of max-content made every mark on a line (a
    // step's) measure all the lines again.
    fill(code, h("ol", { class: "lines", style: { width: `calc(${longestLine(file.text)}ch + ${LINE_CHROME_REM}rem)` } }, lines.map((html, i) =>
      h("li", { class: "line", "data-line": i + 1 },
        h("span", { class: "num", "aria-hidden": "true" }, String(i + 1)),
        h("span", { class: "gutter" }),
        codeLine(html)))));
  }
  markLines(code, state, path, site);
  if (site) {
    morph(where, h("span", { class: "rank-dot", style: { background: rankColour(site.rank) }, "aria-hidden": "true" }),
      `${shortName(path)}:${site.line}`, site.rank !== null && site.rank !== undefined ? ` — rank ${site.rank}` : "",
      state.event && state.event.seq !== site.seq ? ` ${t("(its last call)")}` : "");
    const line = code.querySelector(`.line[data-line="${site.line}"]`);
    const height = sizeOf(code).height;
    const shownKey = `${path}:${site.line}:${height}`;   // re-centre after a resize, too
    if (line && code.dataset.shown !== shownKey) {
      code.dataset.shown = shownKey;
      // Once every view of this drawing has written (a microtask after it): reading the line's place in
      // the middle of the drawing laid the page out there, and again once the views after it wrote.
      queueMicrotask(() => {
        const top = line.offsetTop - height / 2 + line.offsetHeight / 2;
        code.scrollTo({ top: Math.max(0, top), behavior: "auto" });
      });
    }
  } else {
    morph(where, state.event ? "No line of this code at this step."   // short: one line, not cut off
      : "The current event's line is highlighted here.");
  }
}

const markedLines = new WeakMap();   // the code box → Map line number → what is marked on it (its path's lines)

/** The current line and, in the gutter, a dot per rank where it last called into torch.distributed; a step
 *  changes only the lines whose marks changed (a pulsing dot keeps its rhythm). */
function markLines(code, state, path, site) {
  const dots = new Map();   // line number → the dots' attributes
  for (const rs of state.ranks) {
    if (!rs.site || rs.site.path !== path) continue;
    const atGate = Boolean(rs.gate) && !state.final;
    const inside = !state.final && rs.open.some((o) => o.kind !== "compute");
    if (!dots.has(rs.site.line)) dots.set(rs.site.line, []);
    dots.get(rs.site.line).push({
      class: ["rank-dot", atGate && "at-gate", inside && "blocked"],
      style: { background: rankColour(rs.rank), color: rankColour(rs.rank) },
      title: t(atGate ? "rank {rank} waits at the gate before this line's call"
        : inside ? "rank {rank} is inside this line's call" : "rank {rank} was last here", rs),
    });
  }
  const drawn = markedLines.get(code)?.path === path ? markedLines.get(code).lines : new Map();
  const marked = new Map();
  for (const number of new Set([...drawn.keys(), ...dots.keys(), ...(site ? [site.line] : [])])) {
    const mark = { current: number === site?.line, dots: dots.get(number) || [] };
    const key = JSON.stringify(mark);
    if (mark.current || mark.dots.length) marked.set(number, key);
    const line = drawn.get(number) !== key && code.querySelector(`.line[data-line="${number}"]`);
    if (!line) continue;
    line.setAttribute("class", ["line", mark.dots.length && "ranked", mark.current && "current"].filter(Boolean).join(" "));
    if (mark.current) line.setAttribute("aria-current", "true");
    else line.removeAttribute("aria-current");
    line.querySelector(".gutter").replaceChildren(...mark.dots.map((attrs) => h("span", attrs)));
  }
  markedLines.set(code, { path, lines: marked });
}

const LINE_CHROME_REM = 4.9;   // a line's number, gutter and right padding (paralab.css, .source-code)
const WIDE = /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1faff}]/u;

/** The longest line of `text` in monospace columns (a CJK character or an emoji takes two, a tab up to 8). */
function longestLine(text) {
  let longest = 0;
  for (const line of text.split("\n")) {
    let cols = 0;
    for (const ch of line) cols = ch === "\t" ? cols + 8 - (cols % 8) : cols + (WIDE.test(ch) ? 2 : 1);
    longest = Math.max(longest, cols);
  }
  return longest;
}

function codeLine(html) {
  const span = h("code", { class: "text" });
  span.innerHTML = html || " ";   // escaped by highlightPython
  return span;
}
