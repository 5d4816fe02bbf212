/**
 * Words in the reader's language, looked up by key when the page draws (docs/i18n.md).
 *
 * - `t(key, params)`: the page's own words. The key is the English (`t("Run done")`, `t("{n} ranks", {n})`);
 *   `{name}` is filled from `params`. A language lacking the key shows the English.
 * - `tPlural(n, one, many, params)`: `one` when n is 1, else `many`, with `{n}`.
 * - `tMessage(said)`: what the server said — `{code, params}` beside its English (`detail`, `message`,
 *   `error` or `msg`) — translated by its code, falling back to the English.
 * - `tText(english)`: words someone else wrote in English — a lesson's labels, check and metric names
 *   (from the lesson's `texts.<lang>.json`), the judge's reasons: an exact key, else a key with `{name}`
 *   placeholders that matches the whole text (each filled part translated in turn).
 * - `useLessonTexts(texts)` and `lessonField(name, english)`: the lesson's translations ({lang: …}, as
 *   GET /api/lessons/{id} gives them); its title, summary and parameter help.
 *
 * Languages are data: app/static/i18n/<lang>.json (and PARALAB_I18N_PATH), listed by the server in the page
 * (`#paralab-languages`); an exported page carries its dictionaries in `#paralab-dictionaries`.
 * `setLang(lang)` loads the dictionary, remembers the choice and tells the page ("paralab:lang"); views
 * then draw again. Text the server rendered into the page (templates) is translated once per switch by
 * `translateShell`: a documented fallback for the shell only, by exact keys; views never rely on it.
 */

import { here } from "paralab/root.js";

const KEY = "paralab:lang";
const readJson = (id) => {
  try {
    return JSON.parse(document.getElementById(id)?.textContent || "null");
  } catch {
    return null;
  }
};

const switcher = readJson("paralab-languages") || { en: { name: "English", switch: "switch to English" } };
/** {code: the language's own name}, English first; SWITCH: {code: "switch to …" in that language}. */
export const LANGS = Object.fromEntries(Object.entries(switcher).map(([code, about]) => [code, about.name]));
export const SWITCH = Object.fromEntries(Object.entries(switcher).map(([code, about]) => [code, about.switch]));
const embedded = readJson("paralab-dictionaries") || {};
const lessonNames = readJson("paralab-lesson-names") || {};    // {lang: {a lesson's English title or summary: …}}
const dictionaries = { en: {} };
const templateCache = new Map();        // lang → compiled `{name}` keys of its dictionary and lesson texts
const remembered = new Map();           // lang → Map(text → translation): a view draws the same words often
const TRANSLATED = /[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]/;
let lessonTexts = {};

function storedLang() {
  try {
    const lang = localStorage.getItem(KEY);
    return lang && Object.hasOwn(LANGS, lang) ? lang : "en";
  } catch {
    return "en";
  }
}

// Read from localStorage once, then kept (setLang, another tab's switch): every sentence a view writes asks
// for it, and a read of localStorage at each was 1–2 ms of a move on a big run.
let langNow = storedLang();
addEventListener("storage", (event) => {
  if (event.key === KEY || event.key === null) langNow = storedLang();
});

export function currentLang() {
  return langNow;
}

async function load(lang) {
  if (dictionaries[lang]) return;
  let words = embedded[lang];
  if (!words) {
    try {
      const response = await fetch(here(`/api/i18n/${encodeURIComponent(lang)}`));
      if (!response.ok) return;                        // not loaded: the page stays in the language it has
      words = await response.json();
    } catch {
      return;
    }
  }
  dictionaries[lang] = words;
  templateCache.delete(lang);
  remembered.delete(lang);
}

await load(currentLang());

/** `text` with each `{name}` from `params`; a string filled in is itself looked up (`tText`): the label or
 *  the check name a view puts into its sentence is the lesson's words, translated by the lesson's texts. */
function fill(text, params, lang = currentLang()) {
  return text.replace(/\{(\w+)\}/g, (m, name) => {
    if (!params || !(name in params)) return m;
    const value = params[name];
    return typeof value === "string" ? tText(value, lang) : String(value);
  });
}

function exact(key, lang) {
  if (lang === "en") return null;
  const lesson = lessonTexts[lang]?.text;
  if (lesson && Object.hasOwn(lesson, key)) return lesson[key];
  const words = dictionaries[lang];
  if (words && Object.hasOwn(words, key)) return words[key];
  return Object.hasOwn(lessonNames[lang] || {}, key) ? lessonNames[lang][key] : null;
}

/** The page's own words: `key` (the English) in the current language, `{name}` filled from `params`. */
export function t(key, params = {}, lang = currentLang()) {
  return fill(exact(String(key), lang) ?? String(key), params, lang);
}

/** `t(one)` when `n` is 1, else `t(many)`; `{n}` is `n`: tPlural(3, "{n} rank", "{n} ranks"). */
export function tPlural(n, one, many, params = {}) {
  return t(n === 1 ? one : many, { n, ...params });
}

/** Nested messages in params (a hang report's diagnosis, the ranks' notes) translated too. */
function messageParams(params, lang) {
  const out = {};
  for (const [name, value] of Object.entries(params || {})) {
    if (Array.isArray(value) && value.length && value.every((v) => v && typeof v === "object" && "code" in v)) {
      out[name] = value.map((v) => tMessage(v, lang)).join(t("; ", {}, lang));
    } else if (value && typeof value === "object" && "code" in value) {
      out[name] = tMessage(value, lang);
    } else {
      out[name] = value;
    }
  }
  return out;
}

/** What the server said, by its code: `{code, params}` beside the English (`detail`, `message`, `error`,
 *  `msg`), or only the English; falls back to the English where the language lacks the code. A lesson's
 *  rule's code is looked up in the lesson's `errors`. */
export function tMessage(said, lang = currentLang()) {
  if (said === null || said === undefined) return "";
  if (typeof said === "string") return tText(said, lang);
  const english = said.message ?? said.detail ?? said.error ?? said.msg ?? "";
  const code = said.code ?? said.type;
  if (lang !== "en" && code) {
    // codes have a dot (`run.not_found`, `tp_mlp.ffn_splits`); pydantic's error types do not (`missing`)
    const key = code.includes(".") ? code : `pydantic.${code}`;
    const words = lessonTexts[lang]?.errors?.[code] ?? dictionaries[lang]?.[key];
    if (typeof words === "string") return fill(words, messageParams(said.params, lang), lang);
  }
  return typeof english === "string" ? english : "";
}

/** The name before message codes (other branches' code may still call it): `tMessage`. */
export const tServer = (said, lang = currentLang()) => tMessage(said, lang);

function compiledTemplates(lang) {   // [[pattern, names, translation, literal length]]
  if (!templateCache.has(lang)) {
    const sources = [lessonTexts[lang]?.text || {}, dictionaries[lang] || {}];
    let compiled = [];
    for (const [i, source] of sources.entries()) {
      for (const [key, value] of Object.entries(source)) {
        // a key with {name} placeholders and words of its own: a lesson's "step {k}: send chunk {c}"; of the
        // interface's, only those with a few words ("{name} (reference)", "stopped: {why}"), never "{a} of {b}"
        const letters = (key.replace(/\{\w+\}/g, "").match(/[A-Za-z]/g) || []).length;
        if (!/\{\w+\}/.test(key) || letters < (i === 0 ? 2 : 4)) continue;
        const names = [];
        const pattern = key.split(/(\{\w+\})/).map((part) => {
          const m = /^\{(\w+)\}$/.exec(part);
          if (m) {
            names.push(m[1]);
            return "([\\s\\S]+?)";
          }
          return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
        }).join("");
        compiled.push([new RegExp(`^${pattern}$`), names, value, key.replace(/\{\w+\}/g, "").length]);
      }
    }
    // the most specific first: "all-gather step {k}: pass on finished chunk {c}, …" before "all-gather step {k}"
    compiled = compiled.sort((a, b) => b[3] - a[3]);
    templateCache.set(lang, compiled);
  }
  return templateCache.get(lang);
}

/** English text in the current language: by an exact key, else by a key with `{name}` placeholders that
 *  matches the whole text (each part filled in translated in turn). How h() draws every text (dom.js), and
 *  what translates words others wrote: an event's label, a check's name, a judge's reason. */
export function tText(english, lang = currentLang()) {
  const text = String(english ?? "");
  if (lang === "en" || !text.trim() || /^[\d\s.,:·/%×#()+−-]*$/.test(text)) return text;
  let seen = remembered.get(lang);
  if (!seen) remembered.set(lang, (seen = new Map()));
  if (seen.has(text)) return seen.get(text);
  const trimmed = text.trim();
  let out = exact(trimmed, lang);
  if (out === null && !TRANSLATED.test(trimmed)) {        // text in a CJK script is taken as translated already
    for (const [pattern, names, value] of compiledTemplates(lang)) {
      const m = pattern.exec(trimmed);
      if (m) {
        out = fill(value, Object.fromEntries(names.map((name, i) => [name, m[i + 1]])), lang);
        break;
      }
    }
  }
  out = out === null ? text : text.replace(trimmed, () => out);
  if (seen.size > 20000) seen.clear();
  seen.set(text, out);
  return out;
}

/** The lesson's translations, {lang: {title, summary, params, text, errors}} (GET /api/lessons/{id}). */
export function useLessonTexts(texts) {
  lessonTexts = texts || {};
  templateCache.clear();
  remembered.clear();
}

/** The lesson's `title`, `summary`, or a parameter's help (`params.<field>`), in the current language. */
export function lessonField(name, english, lang = currentLang()) {
  const texts = lessonTexts[lang];
  const [section, field] = name.split(".");
  const value = field ? texts?.[section]?.[field] : texts?.[section];
  return typeof value === "string" ? value : english;
}

// ---- the page shell the server rendered ------------------------------------------------------------------
const SKIP = "code, pre, script, style, textarea, .prose, .source-code, [translate='no'], .params-summary";
const ATTRS = ["aria-label", "title", "placeholder", "alt"];
const written = new WeakMap();   // text node or element → [the English, what this module wrote]

function localise(source, lang) {
  const trimmed = source.trim();
  if (!trimmed || lang === "en") return source;
  const flat = trimmed.replace(/\s+/g, " ");
  const out = tText(flat, lang);
  return out === flat ? source : source.replace(trimmed, () => out);
}

function english(node, current, record) {
  return record && current === record[1] ? record[0] : current;
}

/** `was` now shows what `fresh` was drawn with (dom.js's morph): it keeps `fresh`'s English. */
export function carryDrawn(fresh, was) {
  if (written.has(fresh)) written.set(was, written.get(fresh));
  else written.delete(was);
}

/** h() drew `shown` for the English `source` (in a text node, or in attribute `attr`): a switch of
 *  language draws that node again from its English even where no view redraws it (a hidden panel). */
export function noteDrawn(node, source, shown, attr = null) {
  if (source === shown) return;
  if (attr === null) written.set(node, [source, shown]);
  else {
    const records = written.get(node) || {};
    records[attr] = [source, shown];
    written.set(node, records);
  }
}

/** The templates' own words under `root` in `lang`, by exact keys (and back to English). Run once when
 *  the page starts and at each switch — no watcher: what views draw, they draw through t() and h(). */
export function translateShell(root = document.body, lang = currentLang()) {
  if (!root) return;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.nodeType === Node.ELEMENT_NODE && node.matches(SKIP) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  for (let node = walker.currentNode; node; node = walker.nextNode()) {
    if (node.nodeType === Node.TEXT_NODE) {
      const source = english(node, node.data, written.get(node));
      const next = localise(source, lang);
      if (next !== source) written.set(node, [source, next]);
      if (node.data !== next) node.data = next;
    } else {
      const records = written.get(node) || {};
      for (const name of ATTRS) {
        if (!node.hasAttribute(name)) continue;
        const source = english(node, node.getAttribute(name), records[name]);
        const next = localise(source, lang);
        if (next !== source) records[name] = [source, next];
        if (node.getAttribute(name) !== next) node.setAttribute(name, next);
      }
      if (Object.keys(records).length) written.set(node, records);
    }
  }
}

function htmlLang(lang) {
  return dictionaries[lang]?._html_lang || (lang === "en" ? "en" : lang);
}

/** Put the page in `lang` now: the shell's words and the document's language. */
export function applyLang(lang = currentLang()) {
  const active = Object.hasOwn(LANGS, lang) && dictionaries[lang] ? lang : "en";
  document.documentElement.lang = htmlLang(active);
  translateShell(document.body, active);
}

/** Switch the interface's language: load it, remember it, and tell the page ("paralab:lang" on document). */
export async function setLang(lang) {
  const asked = Object.hasOwn(LANGS, lang) ? lang : "en";
  await load(asked);
  const wanted = dictionaries[asked] ? asked : "en";
  langNow = wanted;
  try {
    localStorage.setItem(KEY, wanted);
  } catch {
    /* private mode: this page only */
  }
  applyLang(wanted);
  document.dispatchEvent(new CustomEvent("paralab:lang", { detail: { lang: wanted } }));
}

/** What a label says after its prefix ("g forward: sum the partial outputs" → "sum the partial outputs"), in
 *  either script's colon (":" or "："); the whole label where it has none. */
export function afterColon(label) {
  const parts = String(label ?? "").split(/[:：]/);
  return parts.length > 1 ? parts.slice(1).join(":").trim() : String(label ?? "");
}
