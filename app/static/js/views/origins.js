/**
 * Before → after: each rank's tensor before the collective and after it, as rows of cells with
 * their numbers, every after-cell coloured by the rank(s) its value came from (the tensor event's
 * `origin`; stripes when several ranks were summed). For a collective that cuts tensors into chunks,
 * each before-row marks which rank each chunk goes to. Hovering (or focusing) an after-cell traces it
 * back: its source cells light up and the line under the grid spells the value out ("64 = 1 + 11 + …").
 *
 * Drawn from the state at the cursor: a rank's after-row appears when its `after` event has happened.
 */

import { changed, fill, h, remPx, sizeOf } from "paralab/dom.js";
import { t, tText } from "paralab/i18n.js";
import { rankColour } from "paralab/palette.js";
import { formatNumber, rankList } from "paralab/replay.js";
import { OP_STORY } from "paralab/views/collective-layout.js";
import { cellValue } from "paralab/views/heatmap.js";

const SPLIT_OPS = ["reduce_scatter", "all_to_all", "scatter"];
const BEFORE_NAMES = ["before", "input"];

/** The names of the tensors this view draws (so the heatmap panel can leave them out). */
export function originNames(state) {
  const pair = findPair(state);
  return pair ? [pair.beforeName, pair.afterName].filter(Boolean) : [];
}

function findPair(state) {
  let afterName = null;
  for (const [name, byRank] of state.loose) {
    if ([...byRank.values()].some((e) => Array.isArray(e.origin))) afterName = name;
  }
  if (!afterName) return null;
  const beforeName = BEFORE_NAMES.find((n) => state.loose.has(n)) || null;
  return { afterName, beforeName };
}

/** The collective (or send/recv) the tensors went through, and its root. */
function theCall(state) {
  const collectives = [...state.collectives.values()];
  const c = collectives[collectives.length - 1];
  if (c) return { op: c.op, root: c.root ?? 0, ranks: c.ranks, reduceOp: c.reduceOp || "sum" };
  if (state.p2p.length) return { op: "send_recv", root: 0, ranks: null };
  return null;
}

/** Where element k of rank `dest`'s output comes from: [{rank, index}] into the before-tensors. */
export function sourcesOf(op, dest, k, world, n, root = 0) {
  const all = (index) => Array.from({ length: world }, (_, r) => ({ rank: r, index }));
  const c = Math.floor(n / world);
  switch (op) {
    case "broadcast": return [{ rank: root, index: k }];
    case "reduce": return dest === root ? all(k) : [{ rank: dest, index: k }];
    case "all_reduce": return all(k);
    case "all_gather": return [{ rank: Math.floor(k / n), index: k % n }];
    case "reduce_scatter": return all(dest * c + k);
    case "all_to_all": return [{ rank: Math.floor(k / c), index: dest * c + (k % c) }];
    case "scatter": return [{ rank: root, index: dest * c + k }];
    case "gather": return dest === root ? [{ rank: Math.floor(k / n), index: k % n }] : [{ rank: dest, index: k }];
    case "send_recv": return dest % 2 === 1 ? [{ rank: dest - 1, index: k }] : [{ rank: dest, index: k }];
    default: return [{ rank: dest, index: k }];
  }
}

/** The values of a preview, flattened; `exact` says whether they are the tensor's own. */
function valuesOf(tensor) {
  return (tensor?.preview || []).flat().map(cellValue);
}

function show(v) {
  if (!Number.isFinite(v)) return formatNumber(v);
  return Number.isInteger(v) ? String(v) : formatNumber(Number(v.toFixed(2)));
}

function tint(rank, amount = 30) {
  return `color-mix(in srgb, ${rankColour(rank)} ${amount}%, white)`;
}

/** A cell's background: its rank's tint, or equal stripes of each origin rank's. */
function originBackground(ranks) {
  if (!ranks.length) return "#f1f5f9";
  if (ranks.length === 1) return tint(ranks[0]);
  const w = 100 / ranks.length;
  const stops = ranks.map((r, i) => `${tint(r, 42)} ${(i * w).toFixed(2)}% ${((i + 1) * w).toFixed(2)}%`);
  return `linear-gradient(90deg, ${stops.join(", ")})`;
}

/** Origins per preview cell: a block of a downsampled tensor came from the union of its elements' ranks. */
function cellOrigins(origin, cells) {
  if (!Array.isArray(origin) || !origin.length) return Array.from({ length: cells }, () => []);
  if (origin.length === cells) return origin.map((o) => [...o].sort((a, b) => a - b));
  return Array.from({ length: cells }, (_, j) => {
    const from = Math.floor((j * origin.length) / cells);
    const to = Math.floor(((j + 1) * origin.length) / cells);
    return [...new Set(origin.slice(from, Math.max(to, from + 1)).flat())].sort((a, b) => a - b);
  });
}

function sameRanks(a, b) {
  return a.length === b.length && a.every((r, i) => r === b[i]);
}

export function renderOrigins(container, state, { runId, worldSize }) {
  const pair = findPair(state);
  if (!pair) {
    if (changed(container, "none")) fill(container, h("p", { class: "empty" }, "No tensor has come through the call yet at this step."));
    return true;
  }
  const call = theCall(state);
  const op = call?.op || null;
  const before = pair.beforeName ? state.loose.get(pair.beforeName) : new Map();
  const after = state.loose.get(pair.afterName);
  const rem = remPx();
  const width = Math.max(320, sizeOf(container).width || 640);
  const key = [runId, rem, width, op, ...[...before.values(), ...after.values()].map((e) => e.seq)].join(",");
  if (!changed(container, key)) return true;

  const world = worldSize || Math.max(0, ...[...before.keys(), ...after.keys()].map((r) => r + 1));
  const ranks = Array.from({ length: world }, (_, r) => r);
  const beforeValues = new Map([...before].map(([r, e]) => [r, valuesOf(e.tensor)]));
  const exactBefore = [...before.values()].every((e) => e.tensor?.exact !== false);
  const nb = Math.max(0, ...[...beforeValues.values()].map((v) => v.length));
  const na = Math.max(0, ...[...after.values()].map((e) => valuesOf(e.tensor).length),
    ...[...after.values()].map((e) => (e.tensor?.exact === false ? 0 : e.origin?.length || 0)));

  // Cell size: before and after side by side when both fit, else one above the other.
  const avail = width - 12 * rem;
  let stacked = false;
  let cell = Math.min(3.2 * rem, avail / Math.max(nb + na, 1));
  if (cell < 2 * rem) {
    stacked = true;
    cell = Math.max(1.3 * rem, Math.min(3.2 * rem, (width - 6 * rem) / Math.max(nb, na, 1)));
  }
  const chunk = SPLIT_OPS.includes(op) && nb % world === 0 ? nb / world : 0;

  const beforeRow = (r) => {
    const values = beforeValues.get(r);
    if (!values) return h("div", { class: "cells pending" }, h("span", { class: "not-yet" }, "not shown yet"));
    const splits = chunk && (op !== "scatter" || r === (call?.root ?? 0));
    return h("div", { class: ["cells", splits && "chunked"] }, values.map((v, i) => {
      const dest = splits ? Math.floor(i / chunk) : null;
      return h("span", {
        class: ["cell", "source-cell", splits && i % chunk === 0 && "chunk-start"], "data-rank": r, "data-index": i,
        style: { background: tint(r, 22), "--dest": dest !== null ? rankColour(dest) : null },
        title: t("rank {rank}, element {index} = {value}", { rank: r, index: i, value: show(v) })
          + (dest !== null ? ` — ${t("goes to rank {dest}", { dest })}` : ""),
      }, show(v), splits && i % chunk === 0 ? h("span", { class: "dest-tag", style: { color: rankColour(dest) } }, `→ r${dest}`) : null);
    }));
  };

  const afterRow = (r) => {
    const entry = after.get(r);
    if (!entry) return h("div", { class: "cells pending" }, h("span", { class: "not-yet" }, "not yet"));
    const values = valuesOf(entry.tensor);
    const exact = entry.tensor?.exact !== false && exactBefore;
    const origins = cellOrigins(entry.origin, values.length);
    return h("div", { class: "cells" }, values.map((v, k) => {
      const from = origins[k];
      let sources = exact && op ? sourcesOf(op, r, k, world, nb, call?.root ?? 0) : null;
      if (sources && !sameRanks([...new Set(sources.map((s) => s.rank))].sort((a, b) => a - b), from)) sources = null;
      const whence = from.length ? rankList(from) : "?";
      // A downsampled tensor's cell is a block mean, not a number of the tensor: name its origin instead.
      const block = entry.tensor?.exact === false;
      const text = !block ? show(v) : from.length === 1 ? `r${from[0]}` : "Σ";
      return h("span", {
        class: ["cell", "origin-cell", from.length > 1 && "mixed", block && "block"], tabindex: "0", "data-rank": r, "data-index": k,
        "data-origin": from.join(" "), "data-sources": sources ? sources.map((s) => `${s.rank}:${s.index}`).join(" ") : "",
        style: { background: originBackground(from) },
        title: t(block ? "rank {rank}, block {index} (mean {value}) — from {whence}" : "rank {rank}, element {index} = {value} — from {whence}",
          { rank: r, index: k, value: show(v), whence }),
      }, h("span", { class: "cell-value" }, text));
    }));
  };

  const chip = (r) => h("span", { class: "rank-chip", style: { "--rank": rankColour(r) } }, `rank ${r}`);
  const grid = stacked
    ? h("div", { class: "origin-grid stacked" },
        h("div", { class: "origin-head" }, h("span", {}), h("span", {}, pair.beforeName || "before")),
        ranks.map((r) => h("div", { class: "origin-row", "data-rank": r }, chip(r), beforeRow(r))),
        h("div", { class: "origin-head" }, h("span", {}), h("span", {}, `${pair.afterName}${op ? ` ${op.replace(/_/g, "-")}` : ""}`)),
        ranks.map((r) => h("div", { class: "origin-row after", "data-rank": r }, chip(r), afterRow(r))))
    : h("div", { class: "origin-grid" },
        h("div", { class: "origin-head" }, h("span", {}), h("span", {}, pair.beforeName || "before"), h("span", {}),
          h("span", {}, pair.afterName)),
        ranks.map((r) => h("div", { class: "origin-row", "data-rank": r },
          chip(r), beforeRow(r), h("span", { class: "origin-arrow", "aria-hidden": "true" }, after.has(r) ? "→" : "⋯"), afterRow(r))));

  const blocks = [...after.values()].some((e) => e.tensor?.exact === false);
  const story = [op && OP_STORY[op] ? t("{op}: {story}.", { op: op.replace(/_/g, "-"), story: t(OP_STORY[op]) }) : "",
    blocks ? t("Long tensors are drawn block by block: each cell names the rank(s) its block came from.") : ""].filter(Boolean).join(" ");
  const untraced = story || t("Hover a number on the right to see where it came from.");
  const trace = h("p", { class: "origin-trace", "aria-live": "polite" }, untraced);
  fill(container,
    h("div", { class: "origin-wrap", style: { "--cell": `${cell.toFixed(1)}px`, "--cell-font": `${Math.min(0.95 * rem, cell * 0.36).toFixed(1)}px` } }, grid),
    h("div", { class: "origin-legend" },
      ranks.map((r) => h("span", { class: "legend-item" }, h("span", { class: "swatch", style: { background: tint(r) } }), t("from rank {rank}", { rank: r }))),
      world > 1 ? h("span", { class: "legend-item" }, h("span", { class: "swatch", style: { background: originBackground(ranks.slice(0, Math.min(world, 4))) } }),
        "stripes: combined from several ranks") : null),
    trace);

  const traced = () => container.querySelectorAll(".cell.traced");
  const clear = () => {
    for (const c of traced()) c.classList.remove("traced");
    trace.textContent = tText(untraced);
  };
  const light = (target) => {
    const cellEl = target instanceof Element ? target.closest(".origin-cell") : null;
    if (!cellEl) return clear();
    clear();
    cellEl.classList.add("traced");
    const r = Number(cellEl.dataset.rank);
    const k = Number(cellEl.dataset.index);
    const value = cellEl.textContent;
    const sources = (cellEl.dataset.sources || "").split(" ").filter(Boolean).map((s) => s.split(":").map(Number));
    if (!sources.length) {
      const from = rankList(cellEl.dataset.origin.split(" "));
      trace.textContent = cellEl.classList.contains("block") ? t("rank {rank}, block {index}: from {from}.", { rank: r, index: k, from })
        : t("rank {rank}, element {index} = {value}: from {from}.", { rank: r, index: k, value, from });
      return;
    }
    const parts = [];
    for (const [sr, si] of sources) {
      const src = container.querySelector(`.source-cell[data-rank="${sr}"][data-index="${si}"]`);
      src?.classList.add("traced");
      parts.push({ rank: sr, index: si, value: src ? src.firstChild.textContent : "?" });
    }
    const values = parts.map((p) => p.value);
    const reduceOp = call?.op === "reduce_scatter" ? "sum" : call?.reduceOp || "sum";
    const how = parts.length === 1 ? values[0]
      : reduceOp === "max" ? `max(${values.join(", ")})`
        : reduceOp === "avg" ? `(${values.join(" + ")}) / ${values.length}` : values.join(" + ");
    const whence = parts.length > 1
      ? t("element {index} of ranks {ranks}, combined", { index: [...new Set(parts.map((p) => p.index))].join("/"), ranks: parts.map((p) => p.rank).join(", ") })
      : t("element {index} of rank {rank}", parts[0]);
    trace.textContent = `${t("rank {rank}, element {index} = {value}", { rank: r, index: k, value })}  ←  ${how}   (${whence})`;
  };
  if (!container.dataset.bound) {
    container.dataset.bound = "1";
    container.addEventListener("pointerover", (e) => container.__light?.(e.target));
    container.addEventListener("pointerleave", () => container.__clear?.());
    container.addEventListener("focusin", (e) => container.__light?.(e.target));
    container.addEventListener("focusout", () => container.__clear?.());
  }
  container.__light = light;
  container.__clear = clear;
  return true;
}
