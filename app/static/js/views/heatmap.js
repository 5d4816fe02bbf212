/**
 * Tensors as heatmaps on a canvas. One canvas draws one matrix made of regions — a whole tensor is one
 * region; a full matrix assembled from shards has one region per rank, at its offset, outlined in the
 * rank's colour. Each region is filled from its preview grid (block means when `exact` is false).
 * The canvas carries what it drew (`canvas.heatmap`) so the hover control can name any cell's value.
 */

import { h, remPx } from "paralab/dom.js";
import { t } from "paralab/i18n.js";
import { heatColour, rankColour } from "paralab/palette.js";

/** A preview value as a number: previews write NaN and infinities as "nan", "inf", "-inf". */
export function cellValue(v) {
  if (typeof v === "number") return v;
  if (v === "inf") return Infinity;
  if (v === "-inf") return -Infinity;
  return Number(v);
}

/** A shape seen as a matrix, as the preview sees it: the last dim as columns, the rest as rows. */
export function matrixShape(shape) {
  if (!shape || shape.length === 0) return [1, 1];
  if (shape.length === 1) return [1, shape[0]];
  const cols = shape[shape.length - 1];
  return [shape.slice(0, -1).reduce((a, b) => a * b, 1), cols];
}

/** The largest |value| of some previews, for a colour scale they share. */
export function sharedLimit(tensors) {
  let limit = 0;
  for (const t of tensors) {
    const m = Number(t?.stats?.abs_max);
    if (Number.isFinite(m)) limit = Math.max(limit, m);
  }
  return limit || 1;
}

/** A region covering a whole tensor preview. */
export function wholeRegion(tensor, rank = null) {
  const [rows, cols] = matrixShape(tensor.shape);
  return { r0: 0, c0: 0, rows, cols, tensor, rank };
}

/**
 * A canvas of a `rows`×`cols` matrix. `regions`: [{r0, c0, rows, cols, tensor, rank}].
 * `box`: {maxW, maxH, maxCell} in CSS px. `outline`: stroke each region in its rank's colour.
 */
export function heatmapCanvas({ name, rows, cols, regions, limit, box, outline = false, runId = null, label = name }) {
  const small = rows * cols <= READABLE_CELLS && regions.every((region) => region.tensor?.exact);
  const cell = Math.min(small ? Math.max(box.maxCell, READABLE_CELL_REM * remPx()) : box.maxCell, box.maxW / cols, box.maxH / rows);
  const width = Math.max(1, Math.round(cols * cell));
  const height = Math.max(1, Math.round(rows * cell));
  const dpr = window.devicePixelRatio || 1;
  const canvas = h("canvas", {
    class: "heatmap", width: Math.round(width * dpr), height: Math.round(height * dpr),
    style: { width: `${width}px`, height: `${height}px` }, role: "img",
    "aria-label": t("{name}: heatmap of a {rows}×{cols} matrix; hover for values", { name: label, rows, cols }),
  });
  const g = canvas.getContext("2d");
  g.scale(dpr, dpr);
  const cells = [];
  const px = width / cols;
  const py = height / rows;

  g.fillStyle = hatch(g);
  g.fillRect(0, 0, width, height);
  for (const region of regions) {
    const grid = region.tensor?.preview || [];
    const pr = grid.length;
    const pc = pr ? grid[0].length : 0;
    if (!pr || !pc) {
      g.fillStyle = "#cbd5e1";
      g.fillRect(region.c0 * px, region.r0 * py, region.cols * px, region.rows * py);
      continue;
    }
    const ch = (region.rows / pr) * py;
    const cw = (region.cols / pc) * px;
    for (let i = 0; i < pr; i++) {
      for (let j = 0; j < pc; j++) {
        const v = cellValue(grid[i][j]);
        g.fillStyle = heatColour(v, limit);
        const x = region.c0 * px + j * cw;
        const y = region.r0 * py + i * ch;
        g.fillRect(Math.floor(x), Math.floor(y), Math.ceil(cw + x - Math.floor(x)), Math.ceil(ch + y - Math.floor(y)));
        if (small) cells.push({ v, x, y, cw, ch });
      }
    }
  }
  if (outline) {
    // Replicated shards (several ranks holding the same block) nest: each copy's outline inside the last.
    const line = Math.max(2, Math.min(4, cell / 3));
    const copies = new Map();
    g.lineWidth = line;
    for (const region of regions) {
      const key = `${region.r0},${region.c0},${region.rows},${region.cols}`;
      const k = copies.get(key) || 0;
      copies.set(key, k + 1);
      const inset = line / 2 + k * line;
      g.strokeStyle = rankColour(region.rank);
      g.strokeRect(region.c0 * px + inset, region.r0 * py + inset,
                   Math.max(0, region.cols * px - 2 * inset), Math.max(0, region.rows * py - 2 * inset));
    }
  }
  if (small && writeNumbers(g, cells, limit)) canvas.dataset.numbers = "shown";
  canvas.heatmap = { name, rows, cols, regions, runId, valueAt: (r, c) => valueAt(regions, r, c) };
  return canvas;
}

/** A tensor of at most this many cells, known exactly, gets cells READABLE_CELL_REM wide, each with
 *  its number: readable from the back of a hall, no hover. */
const READABLE_CELLS = 64;
const READABLE_CELL_REM = 3.2;
const SMALLEST_NUMBER_REM = 0.55;

/** Every cell's number in one format and size that fits the narrowest cell (integers as they are, else
 *  two decimals, one from 10 up), in white on dark colours; none at all when they would be too small
 *  to read (then false): a heatmap with numbers in some cells only would mislead. */
function writeNumbers(g, cells, limit) {
  if (!cells.length) return false;
  const integers = cells.every(({ v }) => Number.isInteger(v));
  const format = (v) => (!Number.isFinite(v) ? String(v) : integers ? String(v) : v.toFixed(limit >= 10 ? 1 : 2));
  const base = 0.8 * remPx();
  g.font = `700 ${base}px "JetBrains Mono", ui-monospace, monospace`;
  const widest = Math.max(...cells.map(({ v }) => g.measureText(format(v)).width));
  const size = Math.min(base, ...cells.map(({ cw, ch }) => Math.min(0.55 * ch, (base * (cw - 4)) / widest)));
  if (size < SMALLEST_NUMBER_REM * remPx()) return false;
  g.font = `700 ${size}px "JetBrains Mono", ui-monospace, monospace`;
  g.textAlign = "center";
  g.textBaseline = "middle";
  for (const { v, x, y, cw, ch } of cells) {
    g.fillStyle = Math.abs(v) / limit > 0.55 ? "#ffffff" : "#0f172a";
    g.fillText(format(v), x + cw / 2, y + ch / 2);
  }
  return true;
}

function valueAt(regions, r, c) {
  for (const region of regions) {
    if (r < region.r0 || r >= region.r0 + region.rows || c < region.c0 || c >= region.c0 + region.cols) continue;
    const grid = region.tensor?.preview || [];
    if (!grid.length || !grid[0].length) return { region, value: null, exact: false };
    const i = Math.floor(((r - region.r0) * grid.length) / region.rows);
    const j = Math.floor(((c - region.c0) * grid[0].length) / region.cols);
    return { region, value: cellValue(grid[i][j]), exact: Boolean(region.tensor.exact), i, j };
  }
  return null;
}

let hatchPattern = null;
function hatch(g) {
  if (!hatchPattern) {
    const tile = document.createElement("canvas");
    tile.width = tile.height = 8;
    const t = tile.getContext("2d");
    t.fillStyle = "#f1f5f9";
    t.fillRect(0, 0, 8, 8);
    t.strokeStyle = "#cbd5e1";
    t.beginPath();
    t.moveTo(0, 8);
    t.lineTo(8, 0);
    t.stroke();
    hatchPattern = tile;
  }
  return g.createPattern(hatchPattern, "repeat");
}

const gridImages = new WeakMap();   // tensor preview → Map limit → its image: a jump back to a collective paints none again

/** A tensor preview as a tiny image (one pixel per preview cell), for drawings inside SVG. */
export function gridImage(tensor, limit) {
  if (!tensor) return null;
  if (!gridImages.has(tensor)) gridImages.set(tensor, new Map());
  const made = gridImages.get(tensor);
  if (!made.has(limit)) made.set(limit, paintGridImage(tensor, limit));
  return made.get(limit);
}

function paintGridImage(tensor, limit) {
  const grid = tensor?.preview || [];
  const rows = grid.length;
  const cols = rows ? grid[0].length : 0;
  if (!rows || !cols) return null;
  const canvas = document.createElement("canvas");
  canvas.width = cols;
  canvas.height = rows;
  const g = canvas.getContext("2d");
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      g.fillStyle = heatColour(cellValue(grid[i][j]), limit);
      g.fillRect(j, i, 1, 1);
    }
  }
  return canvas.toDataURL();
}

/** The colour key: −limit … 0 … +limit. */
export function legend(limit) {
  const fmt = (x) => (Math.abs(x) >= 100 || Math.abs(x) < 0.01 ? x.toExponential(1) : x.toFixed(2));
  return h("div", { class: "legend", "aria-label": t("colour scale from {min} to {max}", { min: fmt(-limit), max: fmt(limit) }) },
    h("span", {}, fmt(-limit)), h("span", { class: "legend-bar" }), h("span", {}, fmt(limit)));
}
