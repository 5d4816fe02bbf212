/**
 * A picture on the page saved as a file, for slides. SVG: a drawing that is SVG already (the collective,
 * the ring, the cost chart) is serialised with its computed styles written into it, so it looks the same
 * outside the page; anything else (heatmaps on canvases, HTML) is wrapped in an SVG <foreignObject>.
 * PNG: that SVG drawn onto a canvas at twice the resolution.
 */

const SVG_PROPS = ["fill", "fill-opacity", "stroke", "stroke-width", "stroke-opacity", "stroke-dasharray", "stroke-linecap",
  "stroke-linejoin", "opacity", "font-family", "font-size", "font-weight", "font-style", "text-anchor", "dominant-baseline",
  "visibility", "display", "image-rendering"];
const HTML_PROPS = ["display", "position", "box-sizing", "width", "height", "min-width", "min-height", "max-width",
  "margin-top", "margin-right", "margin-bottom", "margin-left", "padding-top", "padding-right", "padding-bottom", "padding-left",
  "border-top-width", "border-right-width", "border-bottom-width", "border-left-width",
  "border-top-style", "border-right-style", "border-bottom-style", "border-left-style",
  "border-top-color", "border-right-color", "border-bottom-color", "border-left-color",
  "border-top-left-radius", "border-top-right-radius", "border-bottom-left-radius", "border-bottom-right-radius",
  "background-color", "background-image", "color", "font-family", "font-size", "font-weight", "font-style", "line-height",
  "letter-spacing", "text-align", "text-transform", "text-decoration-line", "white-space", "vertical-align", "overflow",
  "flex-direction", "flex-wrap", "flex-grow", "flex-shrink", "flex-basis", "align-items", "align-self", "justify-content",
  "row-gap", "column-gap", "grid-template-columns", "grid-template-rows", "grid-column-start", "grid-column-end",
  "grid-row-start", "grid-row-end", "order", "opacity", "box-shadow", "list-style-type", "border-collapse",
  "border-spacing", "column-count", "image-rendering", "top", "left", "right", "bottom", "z-index", "text-overflow",
  "font-variant-numeric", "outline-style", "outline-width", "outline-color", "outline-offset", "fill", "stroke"];
const SVG_NS = "http://www.w3.org/2000/svg";
const XHTML_NS = "http://www.w3.org/1999/xhtml";

function copyStyles(source, target, props) {
  const style = getComputedStyle(source);
  const text = props.map((p) => {
    const v = style.getPropertyValue(p);
    return v ? `${p}:${v}` : "";
  }).filter(Boolean).join(";");
  target.setAttribute("style", text);
}

/** Walk `source` and its `clone` together, writing each source element's computed style into the clone. */
function inlineStyles(source, clone, props) {
  const a = [source, ...source.querySelectorAll("*")];
  const b = [clone, ...clone.querySelectorAll("*")];
  for (let i = 0; i < a.length && i < b.length; i++) {
    const svg = a[i] instanceof SVGElement;
    copyStyles(a[i], b[i], svg ? SVG_PROPS : props);
    if (svg && a[i].tagName.toLowerCase() === "svg" && i > 0) {   // an svg inside HTML keeps its laid-out size
      const r = a[i].getBoundingClientRect();
      b[i].setAttribute("width", String(r.width));
      b[i].setAttribute("height", String(r.height));
    }
  }
  // Canvases lose their pixels when cloned: put an image of each in its place.
  const canvases = source.querySelectorAll("canvas");
  const copies = clone.querySelectorAll("canvas");
  canvases.forEach((canvas, i) => {
    const img = document.createElementNS(XHTML_NS, "img");
    img.setAttribute("src", canvas.toDataURL("image/png"));
    img.setAttribute("style", copies[i].getAttribute("style") || "");
    img.setAttribute("alt", canvas.getAttribute("aria-label") || "");
    copies[i].replaceWith(img);
  });
}

function background(el) {
  for (let node = el; node; node = node.parentElement) {
    const colour = getComputedStyle(node).backgroundColor;
    if (colour && colour !== "transparent" && !/rgba\(.*,\s*0\)$/.test(colour)) return colour;
  }
  return "#ffffff";
}

/** The one drawing a picture is made of, if it is one SVG (no canvas beside it). */
function mainSvg(container) {
  if (container.querySelector("canvas")) return null;
  const svgs = [...container.querySelectorAll("svg")].filter((svg) => !svg.closest("button"));
  const area = (el) => {
    const r = el.getBoundingClientRect();
    return r.width * r.height;
  };
  const biggest = svgs.sort((a, b) => area(b) - area(a))[0];
  return biggest && area(biggest) >= 0.35 * area(container) ? biggest : null;
}

/** A drawing a panel keeps behind its "nothing yet" note (dom.js `showNote`) is not on screen: not in the picture either. */
function dropKeptHidden(clone) {
  for (const kept of clone.querySelectorAll(".kept-hidden")) kept.remove();
}

/** The picture in `container` as SVG text, with `padding` px around it. */
export function pictureSvg(container, { padding = 12 } = {}) {
  const fill = background(container);
  const svg = mainSvg(container);
  if (svg) {
    const r = svg.getBoundingClientRect();
    const clone = svg.cloneNode(true);
    inlineStyles(svg, clone, SVG_PROPS);
    dropKeptHidden(clone);
    const width = Math.ceil(r.width + 2 * padding);
    const height = Math.ceil(r.height + 2 * padding);
    const out = document.createElementNS(SVG_NS, "svg");
    out.setAttribute("xmlns", SVG_NS);
    out.setAttribute("width", String(width));
    out.setAttribute("height", String(height));
    out.setAttribute("viewBox", `0 0 ${width} ${height}`);
    const bg = document.createElementNS(SVG_NS, "rect");
    Object.entries({ width: "100%", height: "100%", fill }).forEach(([k, v]) => bg.setAttribute(k, v));
    clone.setAttribute("x", String(padding));
    clone.setAttribute("y", String(padding));
    clone.setAttribute("width", String(r.width));
    clone.setAttribute("height", String(r.height));
    clone.removeAttribute("style");
    clone.removeAttribute("class");
    out.append(bg, clone);
    return { text: new XMLSerializer().serializeToString(out), width, height };
  }
  const r = container.getBoundingClientRect();
  const width = Math.ceil(Math.max(container.scrollWidth, r.width) + 2 * padding);
  const height = Math.ceil(Math.max(container.scrollHeight, r.height) + 2 * padding);
  const clone = container.cloneNode(true);
  inlineStyles(container, clone, HTML_PROPS);
  dropKeptHidden(clone);
  clone.removeAttribute("id");
  clone.style.margin = `${padding}px`;
  clone.style.overflow = "visible";
  clone.setAttribute("xmlns", XHTML_NS);
  const html = new XMLSerializer().serializeToString(clone);
  const text = `<svg xmlns="${SVG_NS}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`
    + `<rect width="100%" height="100%" fill="${fill}"/>`
    + `<foreignObject x="0" y="0" width="${width}" height="${height}">${html}</foreignObject></svg>`;
  return { text, width, height };
}

/** The picture as a PNG blob, `scale` times its size on screen. */
export async function picturePng(container, { scale = 2 } = {}) {
  const { text, width, height } = pictureSvg(container);
  const img = new Image();
  img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(text)}`;
  await img.decode();
  const canvas = document.createElement("canvas");
  canvas.width = Math.round(width * scale);
  canvas.height = Math.round(height * scale);
  const g = canvas.getContext("2d");
  g.scale(scale, scale);
  g.drawImage(img, 0, 0, width, height);
  return new Promise((resolve, reject) => canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error("no PNG"))), "image/png"));
}

/** Save `blob` as a file called `name`. */
export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
}
