/**
 * The interface in English and Chinese. One dictionary, keyed by the English text (as gettext does):
 * pages and views keep writing English, and in Chinese a watcher translates every text node and label
 * it knows — the page chrome, panel headings, buttons, statuses, the room's words. Lesson texts (code,
 * explanations, the lesson's own labels) are not translated here; explanations come in Chinese from the
 * server where the lesson has `explain.zh.md`.
 *
 * `t(english, vars)` translates one string for code that builds text itself; `{name}` is replaced by
 * `vars.name` (the Chinese, all of it, is in i18n-zh.js); `tPlural(n, one, many)` picks by count. `tServer(message)`
 * translates what the server wrote (a run's error, a refusal, a 422's `msg`) by the server patterns there,
 * falling back to the English. `setLang("zh")` switches, remembers the choice and tells the page
 * ("paralab:lang"); the lesson page then draws its views again in the new language.
 */

import { ZH, ZH_BUILT, ZH_PATTERNS, zhServer } from "paralab/i18n-zh.js";

const KEY = "paralab:lang";
export const LANGS = { en: "English", zh: "中文" };

/** Labels built around a name the page already shows: [pattern, Chinese with $1… or a function]. */
const ZH_BUILT_PATTERNS = [
  [/^(.+): tools$/, (m, panel) => `${translate(panel, "zh") ?? panel}：工具`],
  [/^room code ([A-Z0-9]+)$/, "房间码 $1"],
];

const DICTS = { zh: [{ ...ZH, ...ZH_BUILT }, [...ZH_PATTERNS, ...ZH_BUILT_PATTERNS]] };

export function currentLang() {
  try {
    return localStorage.getItem(KEY) === "zh" ? "zh" : "en";
  } catch {
    return "en";
  }
}

/** `english` in the current language (itself where there is no translation); `{name}` from `vars`. */
export function t(english, vars = {}, lang = currentLang()) {
  const out = translate(english, lang) ?? english;
  return out.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
}

/** `t(one)` when `n` is 1, else `t(many)`; `{n}` is `n`: tPlural(3, "{n} rank", "{n} ranks"). */
export function tPlural(n, one, many, vars = {}) {
  return t(n === 1 ? one : many, { n, ...vars });
}

/** A sentence the server wrote (a run's error, a refusal, a 422's `msg`) in the current language:
 *  in Chinese by the patterns of i18n-zh.js, else the English as it came. */
export function tServer(message, lang = currentLang()) {
  const text = String(message ?? "");
  return lang === "zh" ? zhServer(text) : text;
}

/** The translation of one trimmed string, or null. */
function translate(text, lang) {
  const dict = DICTS[lang];
  if (!dict) return null;
  const [exact, patterns] = dict;
  if (Object.hasOwn(exact, text)) return exact[text];
  for (const [pattern, replacement] of patterns) {
    if (pattern.test(text)) return text.replace(pattern, replacement);
  }
  return null;
}

// ---- translating the page in place ------------------------------------------------------------------
const SKIP = "code, pre, script, style, textarea, .prose, .source-code, [translate='no'], .params-summary";
const ATTRS = ["aria-label", "title", "placeholder", "alt"];
const written = new WeakMap();   // text node or element → what this module wrote over which English
let observer = null;
let active = "en";

function skipped(node) {
  const el = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
  return !el || Boolean(el.closest(SKIP));
}

/** `source` in the active language, keeping its surrounding spaces. Inside, a run of spaces and line
 *  breaks counts as one space, as HTML shows it (a template's sentence may wrap). */
function localise(source) {
  const trimmed = source.trim();
  if (!trimmed || active === "en" || /^[\d\s.,:·/%×#-]*$/.test(trimmed)) return source;
  const out = translate(trimmed.replace(/\s+/g, " "), active);
  return out === null ? source : source.replace(trimmed, () => out);
}

function translateText(node) {
  const record = written.get(node);
  const current = node.data;
  const source = record && current === record[1] ? record[0] : current;   // a view may have rewritten it
  const next = localise(source);
  if (next !== source) written.set(node, [source, next]);
  else written.delete(node);
  if (current !== next) node.data = next;
}

function translateAttrs(el) {
  let records = written.get(el);
  for (const name of ATTRS) {
    if (!el.hasAttribute(name)) continue;
    const current = el.getAttribute(name);
    const record = records?.[name];
    const source = record && current === record[1] ? record[0] : current;
    const next = localise(source);
    if (next !== source) {
      if (!records) written.set(el, (records = {}));
      records[name] = [source, next];
    } else if (records) delete records[name];
    if (current !== next) el.setAttribute(name, next);
  }
}

/** Translate (or, in English, restore) everything under `root`. */
export function translateTree(root) {
  if (root.nodeType === Node.TEXT_NODE) {
    if (!skipped(root)) translateText(root);
    return;
  }
  if (root.nodeType !== Node.ELEMENT_NODE && root.nodeType !== Node.DOCUMENT_NODE) return;
  const start = root.nodeType === Node.DOCUMENT_NODE ? root.documentElement : root;
  if (skipped(start)) return;
  const walker = document.createTreeWalker(start, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.nodeType === Node.ELEMENT_NODE && node.matches(SKIP) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  for (let node = walker.currentNode; node; node = walker.nextNode()) {
    if (node.nodeType === Node.TEXT_NODE) translateText(node);
    else translateAttrs(node);
  }
}

function watch() {
  observer?.disconnect();
  observer = null;
  if (active === "en") return;
  observer = new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === "childList") for (const node of record.addedNodes) translateTree(node);
      else if (record.type === "characterData") {
        if (!skipped(record.target)) translateText(record.target);
      } else if (record.type === "attributes" && !skipped(record.target)) translateAttrs(record.target);
    }
  });
  observer.observe(document.documentElement, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ATTRS });
}

/** Put the page in `lang` now, translating what is there and what views draw later. */
export function applyLang(lang = currentLang()) {
  active = DICTS[lang] || lang === "en" ? lang : "en";
  document.documentElement.lang = active === "zh" ? "zh-CN" : "en";
  translateTree(document);
  watch();
}

/** Switch the interface's language, remember it, and tell the page ("paralab:lang" on document). */
export function setLang(lang) {
  try {
    localStorage.setItem(KEY, lang);
  } catch {
    /* private mode: this page only */
  }
  applyLang(lang);
  document.dispatchEvent(new CustomEvent("paralab:lang", { detail: { lang: active } }));
}
