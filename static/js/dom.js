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

/** The root font size in CSS pixels: drawings scale with the text-size control. */
export function remPx() {
  return parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
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
