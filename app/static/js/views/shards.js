/**
 * DTensor placements: for the DTensor redistribution at the cursor (the last collective whose events
 * carry `placements`), the global tensor drawn once per rank, before and after, with the part that
 * rank holds filled in its colour — `Shard(d)`: its 1/n slice of dim d; `Replicate()`: all of it;
 * `Partial()`: all of it, hatched, a partial sum still to be reduced. The mesh, the mesh dimension
 * the collective runs on and the global shape come from the events (workers/dispatch_trace.py).
 */

import { changed, fill, h, s } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { t } from "paralab/i18n.js";

const CELL = 132;   // px: the longer side of a drawn global tensor

/** The last collective up to the cursor whose begin carries DTensor placements. */
function lastRedistribution(state) {
  let found = null;
  for (const c of state.collectives.values()) {
    const begin = c.begins.values().next().value;
    if (begin?.placements && (!found || c.lastSeq > found.c.lastSeq)) found = { c, begin };
  }
  return found;
}

/** rank → its coordinates in the mesh (`ranks` nested as the mesh is). */
function coordinates(ranks, prefix = [], out = new Map()) {
  if (!Array.isArray(ranks)) return out.set(ranks, prefix);
  ranks.forEach((inner, i) => coordinates(inner, [...prefix, i], out));
  return out;
}

/** What a rank at `coords` holds of a tensor of `shape` placed by `placements`: [start, end) per dim, and whether it is a partial sum. */
export function heldRegion(shape, placements, meshShape, coords) {
  const region = shape.map((size) => [0, size]);
  let partial = false;
  placements.forEach((p, meshDim) => {
    const shard = /^Shard\((\d+)\)$/.exec(p);
    if (shard) {
      const d = Number(shard[1]);
      const [lo, hi] = region[d] || [0, 1];
      const chunk = Math.ceil((hi - lo) / meshShape[meshDim]);
      const start = Math.min(lo + coords[meshDim] * chunk, hi);
      if (region[d]) region[d] = [start, Math.min(start + chunk, hi)];
    } else if (p.startsWith("Partial")) partial = true;
  });
  return { region, partial };
}

function describeRegion({ region, partial }, shape) {
  if (partial) return t("partial sum");
  const cut = region.map(([a, b], d) => (a === 0 && b === shape[d] ? ":" : `${a}:${b}`));
  return cut.every((x) => x === ":") ? t("all of it") : `[${cut.join(", ")}]`;
}

function tensorPicture(shape, held, colour, patternId) {
  const rows = shape.length >= 2 ? shape[0] : 1;
  const cols = shape.length ? shape[shape.length - 1] : 1;
  const scale = CELL / Math.max(rows, cols, 1);
  const w = Math.max(cols * scale, 8), ht = Math.max(rows * scale, 8);
  const [r0, r1] = shape.length >= 2 ? held.region[0] : [0, 1];
  const [c0, c1] = shape.length ? held.region[shape.length - 1] : [0, 1];
  return s("svg", { class: "shard-picture", width: w + 4, height: ht + 4, viewBox: `-2 -2 ${w + 4} ${ht + 4}` },
    s("rect", { x: 0, y: 0, width: w, height: ht, class: "shard-global", fill: "none", stroke: "currentColor",
                "stroke-dasharray": "4 3", "stroke-width": 1 }),
    s("rect", { x: c0 * scale, y: r0 * scale * (shape.length >= 2 ? 1 : ht / scale), width: (c1 - c0) * scale,
                height: shape.length >= 2 ? (r1 - r0) * scale : ht, class: held.partial ? "shard-held partial" : "shard-held",
                fill: held.partial ? `url(#${patternId})` : colour, "fill-opacity": held.partial ? 1 : 0.75,
                stroke: colour, "stroke-width": 2 }));
}

function hatch(id, colour) {
  return s("svg", { width: 0, height: 0, style: "position:absolute" },
    s("defs", {}, s("pattern", { id, width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
      s("rect", { width: 6, height: 6, fill: colour, "fill-opacity": 0.25 }),
      s("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: colour, "stroke-width": 3 }))));
}

export function renderShards(container, state) {
  const found = lastRedistribution(state);
  const key = found ? `${found.c.key}@${found.c.lastSeq}` : "none";
  if (!changed(container, key)) return;
  if (!found) {
    fill(container, h("p", { class: "empty" }, t("No DTensor redistribution yet at this step.")));
    return;
  }
  const { c, begin } = found;
  const { mesh, placements } = begin;
  const shape = placements.global_shape || [];
  const where = coordinates(mesh.ranks);
  const axis = mesh.dim_names && mesh.dim !== null && mesh.dim !== undefined ? mesh.dim_names[mesh.dim] : mesh.dim;
  const heading = h("p", { class: "shards-heading" },
    t("{op} on mesh {mesh}, dimension {axis}: a [{shape}] tensor goes from {before} to {after}.", {
      op: c.op.replace(/_/g, "-"), mesh: `(${mesh.shape.join("×")})`, axis: String(axis),
      shape: shape.join(", "), before: placements.before.join(" "), after: placements.after.join(" ") }));
  const side = (which) => h("div", { class: "shards-side", "data-side": which },
    h("h3", {}, `${t(which === "before" ? "before" : "after")}: ${placements[which].join(" ")}`),
    ...[...where.entries()].map(([rank, coords]) => {
      const held = heldRegion(shape, placements[which], mesh.shape, coords);
      const colour = rankColour(rank);
      const id = `hatch-${which}-${rank}`;
      return h("figure", { class: "shard", "data-rank": rank, "data-held": describeRegion(held, shape),
                           "data-partial": held.partial ? "true" : "false" },
        hatch(id, colour), tensorPicture(shape, held, colour, id),
        h("figcaption", {}, h("b", { style: `color:${colour}` }, `rank ${rank}`), ` ${describeRegion(held, shape)}`));
    }));
  fill(container, heading, h("div", { class: "shards-sides" }, side("before"), side("after")));
}
