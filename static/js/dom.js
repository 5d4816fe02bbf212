/** Building DOM and SVG nodes from data, with text always set as text (never parsed as HTML). */

const SVG_NS = "http://www.w3.org/2000/svg";

function build(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    else if (key === "style" && typeof value === "object") {
      for (const [prop, v] of Object.entries(value)) node.style.setProperty(prop.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), v);
    }
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
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

// ---- sizes, read without forcing a layout in the middle of a drawing ------------------------------
// Reading a size after the views have written forces the browser to lay the page out there and then
// again after the next write. So the root font size is read once per drawing, before any writes
// (`beginDrawing`), and a container's size is kept from a ResizeObserver, which reports it after layout.

let rootFontPx = null;
const sizes = new WeakMap();            // element → {width, height}: its client size at the last layout
const resizeListeners = new Set();
const observer = typeof ResizeObserver === "function" ? new ResizeObserver(noteSizes) : null;

function noteSizes(entries) {
  let moved = false;
  for (const { target } of entries) {
    const size = { width: target.clientWidth, height: target.clientHeight };
    const old = sizes.get(target);
    if (old && old.width === size.width && old.height === size.height) continue;
    sizes.set(target, size);
    moved = true;
  }
  if (moved) for (const fn of resizeListeners) fn();
}

/** Call before a drawing writes anything: the root font size is read here, once. */
export function beginDrawing() {
  rootFontPx = null;
  remPx();
}

/** Call `fn` when a container measured with `sizeOf` changes size (the drawing is then due again). */
export function onResize(fn) {
  resizeListeners.add(fn);
}

/** The root font size in CSS pixels: drawings scale with the text-size control. */
export function remPx() {
  rootFontPx ??= parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
  return rootFontPx;
}

/** `el`'s client width and height, as of the last layout; measured now only the first time, or while 0
 *  (hidden: it may be shown by this very drawing). */
export function sizeOf(el) {
  if (!observer) return { width: el.clientWidth, height: el.clientHeight };
  let size = sizes.get(el);
  if (!size || !size.width) {
    size = { width: el.clientWidth, height: el.clientHeight };
    sizes.set(el, size);
    observer?.observe(el);
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

