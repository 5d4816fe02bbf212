/**
 * Numbers: the metrics the ranks reported that no other panel draws (e.g. tp_attention's
 * `kv_cache_copies`), each with the lesson's formula and its expected value, as the metric event sends them.
 */

import { changed, fill, h } from "paralab/dom.js";
import { t, tText } from "paralab/i18n.js";
import { formatNumber } from "paralab/replay.js";

/** What a metric means, in words, where its name alone does not say. */
const MEANING = {
  kv_cache_copies: "how many ranks store each KV head's cache: with fewer KV heads than ranks (GQA), every KV head — its Wk, Wv and its K/V cache — is replicated",
};

/** A metric's card title: the lesson's words for its name (texts.<lang>.json), else the name in words. */
function title(name) {
  const words = tText(name);
  return words !== name ? words : name.replace(/_/g, " ").replace(/^kv /, "KV ").replace(/^./, (c) => c.toUpperCase());
}

/** ctx.claimed: the metric names other views draw (views/registry.js). */
export function renderNumbers(container, state, { runId, claimed = new Set() }) {
  const metrics = [...state.metrics.values()].filter((e) => !claimed.has(e.name));
  if (!metrics.length) {
    if (changed(container, "none")) fill(container, h("p", { class: "empty" }, "No numbers yet at this step."));
    return true;
  }
  const key = [runId, ...metrics.map((e) => e.seq)].join(",");
  if (!changed(container, key)) return true;
  fill(container, h("div", { class: "number-cards" }, metrics.map((e) => {
    const expected = e.expected ?? undefined;
    const verdict = expected === undefined ? null : e.value === expected ? "pass" : "fail";
    return h("div", { class: ["number-card", verdict], "data-metric": e.name },
      h("div", { class: "number-name" }, title(e.name)),
      h("div", { class: "number-value" }, h("strong", {}, formatNumber(e.value)), e.unit ? ` ${e.unit}` : ""),
      e.formula ? h("div", { class: "number-formula" }, h("span", { class: "label" }, "formula: "), h("code", {}, e.formula)) : null,
      expected !== undefined
        ? h("div", { class: "number-expected" }, t(verdict === "pass" ? "expected {value} — ✓ as predicted" : "expected {value} — ✗ differs", { value: formatNumber(expected) })) : null,
      MEANING[e.name] ? h("p", { class: "number-meaning" }, MEANING[e.name]) : null);
  })));
  return true;
}
