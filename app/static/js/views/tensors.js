/**
 * Tensors at the cursor. A tensor shown in shards is drawn once as its full matrix, with each rank's
 * shard in place at its offset and outlined in the rank's colour (unreceived parts hatched). Other
 * tensors are drawn side by side, one heatmap per rank.
 */

import { changed, fill, h, remPx } from "paralab/dom.js";
import { t, tPlural, tText } from "paralab/i18n.js";
import { rankColour } from "paralab/palette.js";
import { heatmapCanvas, legend, matrixShape, sharedLimit, wholeRegion } from "paralab/views/heatmap.js";

function range(a, b) {
  return b - a === 1 ? `${a}` : `${a}–${b - 1}`;
}

/** Where each shard sits, in words: "rows 16–31" or "columns 0–15". */
function shardWhere(shard, fullShape) {
  const [rows, cols] = matrixShape(shard.tensor.shape);
  const [r0, c0] = shard.offset.length >= 2 ? shard.offset.slice(-2) : [0, shard.offset[0] || 0];
  const [fr, fc] = matrixShape(fullShape);
  const parts = [];
  if (rows !== fr) parts.push(t("rows {range}", { range: range(r0, r0 + rows) }));
  if (cols !== fc) parts.push(t("columns {range}", { range: range(c0, c0 + cols) }));
  return parts.join(", ") || t("all of it");
}

/** Shards at the same place are copies of one block (e.g. GQA's KV heads on more ranks than heads). */
function blocksOf(regions) {
  const blocks = new Map();
  for (const region of regions) {
    const key = `${region.r0},${region.c0},${region.rows},${region.cols}`;
    if (!blocks.has(key)) blocks.set(key, { ...region, ranks: [] });
    blocks.get(key).ranks.push(region.rank);
  }
  return [...blocks.values()];
}

function placedCard(placed, ctx, fresh) {
  const [rows, cols] = matrixShape(placed.fullShape);
  const shards = [...placed.shards.values()].sort((a, b) => a.rank - b.rank);
  const regions = shards.map((s) => {
    const [sr, sc] = matrixShape(s.tensor.shape);
    const [r0, c0] = s.offset.length >= 2 ? s.offset.slice(-2) : [0, s.offset[0] || 0];
    return { r0, c0, rows: sr, cols: sc, tensor: s.tensor, rank: s.rank };
  });
  const limit = sharedLimit(shards.map((s) => s.tensor));
  const canvas = heatmapCanvas({ name: placed.name, rows, cols, regions, limit, box: ctx.box, outline: true, runId: ctx.runId });
  const replicated = blocksOf(regions).filter((b) => b.ranks.length > 1);
  const where = (s) => shardWhere(s, placed.fullShape);
  const copiesOf = new Map(replicated.flatMap((b) => b.ranks.map((r) => [r, b])));
  const listed = shards.filter((s) => !copiesOf.has(s.rank) || copiesOf.get(s.rank).ranks[0] === s.rank);
  const cssW = parseFloat(canvas.style.width);
  const cssH = parseFloat(canvas.style.height);
  const badges = replicated.map((b) => h("span", { class: "copies-badge", "data-ranks": b.ranks.join(","), title: t("ranks {ranks} each hold this block", { ranks: b.ranks.join(", ") }),
    style: { left: `${((b.c0 + b.cols / 2) / cols) * cssW}px`, top: `${((b.r0 + b.rows / 2) / rows) * cssH}px` } },
    (b.cols / cols) * cssW < 6 * remPx() ? `×${b.ranks.length}` : t("×{n} copies", { n: b.ranks.length })));
  return h("figure", { class: ["tensor-card", "placed", fresh && "fresh", replicated.length && "replicated"], "data-tensor": placed.name },
    h("figcaption", {},
      h("strong", {}, placed.name), ` [${placed.fullShape.join("×")}] — `,
      t("{placed} of {n} shards in place", { placed: shards.length, n: ctx.worldSize || shards.length }),
      replicated.length ? h("span", { class: "replicated-note" },
        ` · ${tPlural(replicated.length, "{n} block replicated ×{copies}", "{n} blocks replicated ×{copies}",
          { copies: Math.max(...replicated.map((b) => b.ranks.length)) })}`) : null),
    h("div", { class: ["canvas-wrap", badges.length && "has-badges"] }, canvas, badges),
    h("ul", { class: "shard-list" }, listed.map((s) => {
      const block = copiesOf.get(s.rank);
      if (!block) {
        return h("li", { style: { "--rank": rankColour(s.rank) } }, h("span", { class: "swatch", "aria-hidden": "true" }), `rank ${s.rank}: ${where(s)}`);
      }
      return h("li", { class: "replicated", style: { "--rank": rankColour(s.rank) } },
        block.ranks.map((r) => h("span", { class: "swatch", style: { "--rank": rankColour(r) }, "aria-hidden": "true" })),
        t("ranks {ranks}: {where} — the same block, ×{n} copies", { ranks: block.ranks.join(", "), where: where(s), n: block.ranks.length }));
    })),
    legend(limit));
}

function looseRow(name, byRank, ctx, freshRank) {
  const entries = [...byRank.values()].sort((a, b) => a.rank - b.rank);
  const limit = sharedLimit(entries.map((e) => e.tensor));
  const small = { ...ctx.box, maxW: ctx.box.maxW / Math.max(2, Math.min(entries.length, 4)) * 1.4 };
  return h("figure", { class: ["tensor-card", "loose", freshRank !== null && "fresh"], "data-tensor": name },
    h("figcaption", {}, h("strong", {}, name), ` ${t("[{shape}] on each rank", { shape: entries[0].tensor.shape.join("×") })}`),
    h("div", { class: "rank-tensors" }, entries.map((e) =>
      h("div", { class: ["rank-tensor", e.rank === freshRank && "fresh"], style: { "--rank": rankColour(e.rank) } },
        h("span", { class: "rank-label" }, `rank ${e.rank}`),
        heatmapCanvas({ name: `${tText(name)} (rank ${e.rank})`, ...shapeOf(e.tensor), regions: [wholeRegion(e.tensor, e.rank)],
                        limit, box: small, outline: true, runId: ctx.runId })))),
    legend(limit));
}

function shapeOf(tensor) {
  const [rows, cols] = matrixShape(tensor.shape);
  return { rows, cols };
}

export function renderTensors(container, state, { runId, worldSize, skip = new Set() }) {
  const event = state.event;
  const loose = [...state.loose.entries()].filter(([name]) => !skip.has(name));
  const freshName = event && event.kind === "tensor" ? (event.place ? event.place.inside : event.name) : null;
  const key = [runId, remPx(), freshName, event?.rank,
    ...[...state.placed.values()].flatMap((p) => [...p.shards.values()].map((s) => s.seq)),
    ...loose.flatMap(([, m]) => [...m.values()].map((e) => e.seq)), skip.size].join(",");
  if (!changed(container, key)) return;
  const rem = remPx();
  const ctx = { runId, worldSize, box: { maxW: 22 * rem, maxH: 16 * rem, maxCell: 1.5 * rem } };
  if (!state.placed.size && !loose.length) {
    fill(container, h("p", { class: "empty" }, skip.size
      ? "Every tensor shown so far is drawn in the panels above." : "No tensors shown yet at this step."));
    return;
  }
  fill(container,
    h("div", { class: "tensor-grid" },
      [...state.placed.values()].map((p) => placedCard(p, ctx, p.name === freshName)),
      loose.map(([name, byRank]) => looseRow(name, byRank, ctx, name === freshName ? event.rank : null))));
}
