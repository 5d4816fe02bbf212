/**
 * What every page has, in the manner of a slide deck: the theme (light, dark, high contrast) and the
 * language (one button per language app/static/i18n/ holds), both remembered; the keys B (blank the screen), F (full screen), ? (the key
 * list), + and − (text size); and "Present" — open a lecture room for what is on screen.
 * Loaded by base.html on every page; the lesson page's own keys (→ ← Space Home End) are in keyboard.js.
 */

import { h } from "paralab/dom.js";
import { typing } from "paralab/controls/keyboard.js";
import { applyLang, currentLang, LANGS, setLang, SWITCH, t, tText } from "paralab/i18n.js";
import { presentRoom } from "paralab/rooms.js";

const THEME_KEY = "paralab:theme";
export const THEMES = { light: "Light", dark: "Dark", contrast: "High contrast" };

export function currentTheme() {
  try {
    const saved = localStorage.getItem(THEME_KEY);
    return saved in THEMES ? saved : "light";
  } catch {
    return "light";
  }
}

function setTheme(theme) {
  document.documentElement.dataset.theme = theme;
  try {
    localStorage.setItem(THEME_KEY, theme);
  } catch {
    /* this page only */
  }
  renderPrefs();
  document.dispatchEvent(new CustomEvent("paralab:theme", { detail: { theme } }));
  window.dispatchEvent(new Event("resize"));   // drawings that take colours from the theme redraw
}

const $ = (selector) => document.querySelector(selector);

function renderPrefs() {
  const theme = $('[data-action="theme"]');
  if (theme) {
    const name = THEMES[currentTheme()];
    theme.querySelector(".pref-value").textContent = t(name);
    theme.setAttribute("aria-label", t("Theme: {name}", { name: t(name) }));
    theme.title = t("Theme: {name}", { name: t(name) });
  }
  const switcher = $('[data-action-group="lang"]');
  if (switcher) {
    // one button per other language (app/static/i18n/*.json): its own name, and "switch to …" in its own words
    switcher.replaceChildren(...Object.entries(LANGS).filter(([code]) => code !== currentLang()).map(([code, name]) => {
      const said = `${name} — ${SWITCH[code] || name}`;
      return h("button", { type: "button", "data-action": "lang", "data-lang": code, lang: code === "zh" ? "zh-CN" : code,
        "aria-label": said, title: said, translate: "no" }, name);
    }));
  }
}

// ---- the key list ---------------------------------------------------------------------------------------
const KEYS = [
  [null, [
    [["→", "Space"], "Next event"],
    [["←"], "Previous event"],
    [["Home", "End"], "First / last event"],
    [["]", "["], "Next / previous collective or send/recv"],
    [["}", "{"], "Next / previous microbatch (pipelines)"],
    [["Z"], "Focus: one picture fills the screen (Esc leaves)"],
    [["B"], "Blank the screen (press again to come back)"],
    [["F"], "Full screen"],
    [["+", "−"], "Larger / smaller text"],
    [["?"], "This list of keys"],
    [["Esc"], "Close this list, or leave the blank screen"],
  ]],
  ["Step mode", [
    [["0", "…", "9"], "Release that rank"],
    [["A", "Enter"], "Release every waiting rank"],
    [["C", "P"], "Continue / pause the ranks"],
  ]],
  ["On a big run's Gantt chart (click it first)", [
    [["wheel", "+", "−"], "Zoom in / out"],
    [["drag", "←", "→"], "Pan (Shift: further)"],
    [["0"], "The whole run again"],
  ]],
  ["In a room", [
    [["L"], "Rejoin the presenter (followers)"],
    [["Q"], "Show the room code and QR code"],
  ]],
];

let dialog = null;

function keyDialog() {
  if (dialog) return dialog;
  dialog = h("dialog", { class: "keys-dialog", "aria-labelledby": "keys-title" },
    h("div", { class: "keys-head" },
      h("h2", { id: "keys-title" }, "Keyboard"),
      h("button", { type: "button", class: "keys-close", onclick: () => dialog.close() }, "Close")),
    KEYS.map(([title, rows]) => [
      title ? h("h3", {}, title) : null,
      h("dl", { class: "keys-list" }, rows.map(([keys, what]) => [
        h("dt", {}, keys.map((k) => (k === "…" ? " … " : h("kbd", {}, k)))),
        h("dd", {}, what)])),
    ]));
  document.body.append(dialog);
  return dialog;
}

export function toggleKeys() {
  const d = keyDialog();
  if (d.open) d.close();
  else d.showModal();
}

// ---- blank screen and full screen -------------------------------------------------------------------------
let blank = null;

export function toggleBlank(on = !(blank && !blank.hidden)) {
  if (!blank) {
    blank = h("div", { class: "blank-screen", hidden: true, role: "dialog", "aria-modal": "true", "aria-label": "The screen is blank. Press B to come back.",
                       tabindex: "-1", onclick: () => toggleBlank(false) },
      h("p", { class: "visually-hidden" }, "The screen is blank. Press B to come back."),
      h("p", { class: "blank-note" }, "The presenter has blanked the screen."));   // a follower's only: else it looks broken
    document.body.append(blank);
  }
  const changed = blank.hidden === on;
  blank.hidden = !on;
  document.body.classList.toggle("blanked", on);
  if (on) blank.focus();
  if (changed) document.dispatchEvent(new CustomEvent("paralab:blank", { detail: { on } }));
}

export async function toggleFullscreen() {
  try {
    if (document.fullscreenElement) await document.exitFullscreen();
    else await document.documentElement.requestFullscreen();
  } catch {
    /* refused (an iframe, a test browser): nothing to do */
  }
}

function clickAction(name) {
  const button = $(`[data-action="${name}"]`);
  if (button && !button.disabled) button.click();
}

function onKey(event) {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  if (blank && !blank.hidden) {                      // a blank screen swallows keys until B or Esc
    if (["b", "B", "Escape", "."].includes(event.key)) toggleBlank(false);
    event.preventDefault();
    return;
  }
  if (event.defaultPrevented || typing(event.target) || dialog?.open && event.key !== "?") return;
  const action = {
    b: () => toggleBlank(true),
    B: () => toggleBlank(true),
    ".": () => toggleBlank(true),
    f: toggleFullscreen,
    F: toggleFullscreen,
    "?": toggleKeys,
    "+": () => clickAction("text-larger"),
    "=": () => clickAction("text-larger"),
    "-": () => clickAction("text-smaller"),
    "−": () => clickAction("text-smaller"),
  }[event.key];
  if (!action) return;
  event.preventDefault();
  action();
}

// ---- Present: a room for this page's lesson ---------------------------------------------------------------
async function present(button) {
  const lessonId = document.querySelector("[data-lesson]")?.dataset.lesson || null;
  const query = new URLSearchParams(location.search);
  const worldSize = Number(query.get("world_size")) || null;
  const params = {};
  for (const [k, v] of query) if (!["run", "seq", "world_size"].includes(k)) params[k] = v;
  button.disabled = true;
  const label = button.textContent;
  button.textContent = t("Opening a room…");
  try {
    await presentRoom({ lesson: lessonId, worldSize, params });
  } catch (err) {
    button.textContent = tText(err.message);
    setTimeout(() => { button.textContent = label; }, 4000);
  } finally {
    button.disabled = false;
  }
}

export function bindChrome() {
  document.documentElement.dataset.theme = currentTheme();
  applyLang(currentLang());
  $('[data-action="theme"]')?.addEventListener("click", () => {
    const names = Object.keys(THEMES);
    setTheme(names[(names.indexOf(currentTheme()) + 1) % names.length]);
  });
  $('[data-action-group="lang"]')?.addEventListener("click", async (event) => {
    const button = event.target.closest('[data-action="lang"]');
    if (!button) return;
    await setLang(button.dataset.lang);
    renderPrefs();
  });
  $('[data-action="keys"]')?.addEventListener("click", toggleKeys);
  const presentButton = $('[data-action="present"]');
  presentButton?.addEventListener("click", () => present(presentButton));
  document.addEventListener("keydown", onKey);
  renderPrefs();
}

bindChrome();
