/** Building DOM and SVG nodes from data, with text always set as text (never parsed as HTML).
 *  Every text child, `text`, and the words of `title`, `aria-label`, `placeholder` and `alt` are drawn in
 *  the reader's language: each is looked up as a key (`tText`, docs/i18n.md), so a view writes English.
 *  An element made with `translate: "no"` keeps its text children as they are (a user named "admin"). */

import { carryDrawn, noteDrawn, tText } from "paralab/i18n.js";

const SVG_NS = "http://www.w3.org/2000/svg";
const WORDS = new Set(["title", "aria-label", "placeholder", "alt"]);

function build(node, attrs, children) {
  const literal = attrs?.translate === "no";
  const text = (value) => (literal ? document.createTextNode(String(value)) : words(value));
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    else if (key === "style" && typeof value === "object") {
      for (const [prop, v] of Object.entries(value)) node.style.setProperty(prop.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), v);
    }
    else if (key === "text") node.append(text(value));
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (WORDS.has(key)) {
      const shown = tText(String(value));
      node.setAttribute(key, shown);
      noteDrawn(node, String(value), shown, key);
    } else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : typeof child === "string" ? text(child) : document.createTextNode(String(child)));
  }
  return node;
}

/** A text node of `english` in the reader's language, remembered so a switch of language redraws it. */
function words(english) {
  const shown = tText(String(english));
  const node = document.createTextNode(shown);
  noteDrawn(node, String(english), shown);
  return node;
}

/** An HTML element: h("p", {class: "x"}, "text", h("b", {}, "bold")). */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element, same shape as `h`. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** Replace everything inside `container` with `children`. */
export function fill(container, ...children) {
  container.replaceChildren();
  build(container, {}, children);
  return container;
}

/**
 * A view with nothing to show at this step puts `note` (its "nothing yet" line) in `container`: the drawing
 * there stays in the page behind it, hidden but laid out as it was (`.kept-hidden`: content-visibility:
 * hidden), so a drawing that comes back — End after Home — is shown without laying its nodes out again (a
 * table of 24 calls took 4-10 ms to lay out, about as long as the rest of the move). `drawn(container)`
 * takes the note away before the view draws again.
 */
const notes = new WeakMap();
export function showNote(container, note) {
  const shown = notes.get(container);
  if (shown && shown.parentNode === container) {
    morphElement(shown, note);
    return container;
  }
  for (const child of container.children) child.classList.add("kept-hidden");
  container.prepend(note);
  notes.set(container, note);
  return container;
}

/** `container` is to show a drawing again: the note `showNote` put there goes, and the drawing kept behind it shows. */
export function drawn(container) {
  const note = notes.get(container);
  if (!note) return container;
  notes.delete(container);
  note.remove();
  for (const child of [...container.getElementsByClassName("kept-hidden")]) if (child.parentNode === container) child.classList.remove("kept-hidden");
  return container;
}

/**
 * Fill `container` with what `key` names: the nodes a recent drawing made for the same key (and language)
 * are put back, else `make()`'s children are built. A place seen before — End after Home, a step back
 * and forth — is not built again. The `most` latest drawings are kept.
 */
const keptDrawings = new WeakMap();
export function fillKept(container, key, make, most = 4) {
  const name = `${document.documentElement.lang}|${key}`;
  if (!keptDrawings.has(container)) keptDrawings.set(container, new Map());
  const kept = keptDrawings.get(container);
  let nodes = kept.get(name);
  if (nodes) {
    kept.delete(name);
    // Nodes already there (kept behind a note: showNote) are left in place: put back, they are laid out again.
    const there = container.childNodes;
    if (there.length !== nodes.length || nodes.some((node, i) => there[i] !== node)) container.replaceChildren(...nodes);
  } else {
    fill(container, ...make());
    nodes = [...container.childNodes];
  }
  kept.set(name, nodes);
  if (kept.size > most) kept.delete(kept.keys().next().value);
  return container;
}

// ---- sizes, read without forcing a layout in the middle of a drawing ------------------------------
// Reading a size after the views have written forces the browser to lay the page out there and then
// again after the next write. So the root font size is read once (again only after the text size
// changed), and a container's size is kept from a ResizeObserver, which reports it after layout.

let rootFontPx = null;
const sizes = new WeakMap();            // element → {width, height}: its client size at the last layout
const resizeListeners = new Set();
const observer = typeof ResizeObserver === "function" ? new ResizeObserver(noteSizes) : null;

function noteSizes(entries) {
  let widened = false;
  for (const { target } of entries) {
    const size = { width: target.clientWidth, height: target.clientHeight };
    widened ||= sizes.get(target)?.width !== size.width;
    sizes.set(target, size);
  }
  if (widened) for (const fn of resizeListeners) fn();
}

/** Call `fn` when a container measured with `sizeOf` changes width (the drawings, sized to it, are then due
 *  again; a height follows from what is drawn, or changes with the window, which redraws anyway). */
export function onResize(fn) {
  resizeListeners.add(fn);
}

/** The root font size in CSS pixels: drawings scale with the text-size control. */
export function remPx() {
  rootFontPx ??= parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
  return rootFontPx;
}

/** The text size changed: `remPx` reads the root font size again. */
export function textSizeChanged() {
  rootFontPx = null;
}

/** `el`'s client width and height, as of the last layout; measured now only the first time, or while 0
 *  (hidden: it may be shown by this very drawing). */
export function sizeOf(el) {
  if (!observer) return { width: el.clientWidth, height: el.clientHeight };
  let size = sizes.get(el);
  if (!size || !size.width) {
    size = { width: el.clientWidth, height: el.clientHeight };
    sizes.set(el, size);
    observer.observe(el);
  }
  return size;
}

/** Draw only when `key` changed since the last draw into `container` (keeps animations running), or the
 *  interface's language did (views write their sentences in it). */
const drawnKeys = new WeakMap();
export function changed(container, drawn) {
  const key = `${document.documentElement.lang}|${drawn}`;
  if (drawnKeys.get(container) === key) return false;
  drawnKeys.set(container, key);
  return true;
}

// ---- redrawing without rebuilding -------------------------------------------------------------------
// A step changes a few things on a panel; rebuilding all of it costs the building and the browser's
// styling and layout of every new node. A drawing asks a cache for its nodes by keys that name all they
// show: a key the last drawing asked for too gets that very node back, and `place` leaves a node that
// is already where it belongs alone.

/**
 * Nodes kept from one drawing to the next. `get(key, make)`: a node the last drawing got for `key`
 * (as many as it got: identical arrows stacked on each other are several nodes), or `make()`'s;
 * `done()` ends a drawing and forgets the nodes it did not ask for. A change of the interface's
 * language forgets them all (their text is in it).
 */
export function nodeCache() {
  let last = new Map();      // key → [node, …]
  let now = new Map();
  let lang = null;
  let drawing = false;
  return {
    get(key, make) {
      if (!drawing) {
        drawing = true;
        if (lang !== document.documentElement.lang) last = new Map();
      }
      const node = last.get(key)?.pop() || make();
      if (now.has(key)) now.get(key).push(node);
      else now.set(key, [node]);
      return node;
    },
    done() {
      for (const nodes of now.values()) nodes.reverse();   // `get` pops them in the order they were drawn
      last = now;
      now = new Map();
      lang = document.documentElement.lang;
      drawing = false;
    },
  };
}

const caches = new WeakMap();
/** The node cache of `container` (one per name: a view may keep several). */
export function cacheOf(container, name = "") {
  if (!caches.has(container)) caches.set(container, new Map());
  const byName = caches.get(container);
  if (!byName.has(name)) byName.set(name, nodeCache());
  return byName.get(name);
}

/** Make `nodes` the children of `parent`, in order, moving and removing only what differs. */
export function place(parent, nodes) {
  const wanted = new Set(nodes);
  let at = parent.firstChild;
  for (const node of nodes) {
    while (at && !wanted.has(at)) {
      const next = at.nextSibling;
      at.remove();
      at = next;
    }
    if (node === at) at = at.nextSibling;
    else parent.insertBefore(node, at);
  }
  while (at) {
    const next = at.nextSibling;
    at.remove();
    at = next;
  }
  return parent;
}

/** Set `el`'s attributes to `attrs` where they differ (null: removed). */
export function setAttributes(el, attrs) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) el.removeAttribute(name);
    else {
      const text = WORDS.has(name) ? tText(String(value)) : String(value);
      if (el.getAttribute(name) !== text) el.setAttribute(name, text);
      if (WORDS.has(name)) noteDrawn(el, String(value), text, name);
    }
  }
  return el;
}

/**
 * Like `fill`, but the container's present nodes are made to look like the new ones instead of being
 * replaced: attributes and text that did not change stay untouched, so the browser restyles and lays
 * out only what did. For drawings without listeners on their nodes (tables, captions, text); an
 * element's listeners are not carried over.
 */
export function morph(container, ...children) {
  const fresh = build(document.createDocumentFragment(), {}, children);
  morphChildren(container, [...fresh.childNodes]);
  return container;
}

/** Make element `el` look like `fresh` (an element of the same tag), changing only what differs; returns `el`. */
export function morphElement(el, fresh) {
  morphNode(el, fresh);
  return el;
}

function morphChildren(target, nodes) {
  const old = [...target.childNodes];
  nodes.forEach((node, i) => {
    if (i >= old.length) target.append(node);
    else if (!morphNode(old[i], node)) target.replaceChild(node, old[i]);
  });
  for (let i = nodes.length; i < old.length; i++) old[i].remove();
}

/** Make `was` look like `node`; false when it cannot (another kind of node). */
function morphNode(was, node) {
  if (was.nodeType !== node.nodeType || was.nodeName !== node.nodeName) return false;
  if (node.nodeType === Node.TEXT_NODE) {
    if (was.data !== node.data) was.data = node.data;
    carryDrawn(node, was);
    return true;
  }
  if (node.nodeType !== Node.ELEMENT_NODE) return false;
  carryDrawn(node, was);
  for (const { name, value } of node.attributes) if (was.getAttribute(name) !== value) was.setAttribute(name, value);
  for (const { name } of [...was.attributes]) if (!node.hasAttribute(name)) was.removeAttribute(name);
  morphChildren(was, [...node.childNodes]);
  return true;
}
