/**
 * ZeRO memory per rank: for each rank, the bytes it holds of parameters, gradients and optimizer state,
 * measured (solid bar) against the lesson's formula (a tick) and against plain data parallelism, which
 * keeps all of each on every rank (the dashed outline); then the elements communicated per step
 * against 2Ψ (stages 1, 2) or 3Ψ (stage 3).
 */

import { changed, fill, h } from "paralab/dom.js";
import { t } from "paralab/i18n.js";
import { formatBytes, formatNumber } from "paralab/replay.js";

const PARTS = [
  { metric: "memory_parameters", name: "parameters", letter: "P", colour: "#2563eb" },
  { metric: "memory_gradients", name: "gradients", letter: "G", colour: "#16a34a" },
  { metric: "memory_optimizer_state", name: "optimizer state", letter: "K", colour: "#d97706" },
];
const COMM_METRIC = "comm_elements_per_step";

/** Metrics this view shows (the numbers panel leaves them out). */
export const MEMORY_METRICS = [...PARTS.map((p) => p.metric), COMM_METRIC];

/** "GΨ/N  (Ψ=1088, N=4, P=G=4, K=8)" → {expr: "GΨ/N", psi: 1088, n: 4, bytes: {P: 4, G: 4, K: 8}}. */
export function parseFormula(text) {
  const [expr, rest = ""] = String(text || "").split(/\s{2,}|\s(?=\()/);
  const num = (re) => { const m = re.exec(rest); return m ? Number(m[1]) : null; };
  const pg = num(/P=G=(\d+)/);
  return { expr: expr.trim(), psi: num(/Ψ=(\d+)/), n: num(/N=(\d+)/),
           bytes: { P: pg ?? num(/P=(\d+)/), G: pg ?? num(/G=(\d+)/), K: num(/K=(\d+)/) }, symbols: rest.trim() };
}

function latest(state, metric, rank) {
  return state.rankMetrics.get(metric)?.get(rank)?.at(-1) || null;
}

function bar(part, measured, expected, full, scale) {
  const pct = (x) => `${Math.max(0, Math.min(100, (100 * x) / scale))}%`;
  return h("div", { class: "memory-bar", "data-part": part.letter, role: "img",
                    "aria-label": t(full ? "{part}: measured {measured}, formula {expected}, plain data parallel {full}" : "{part}: measured {measured}, formula {expected}",
                      { part: t(part.name), measured: formatBytes(measured), expected: formatBytes(expected), full: formatBytes(full) }) },
    full ? h("span", { class: "memory-full", style: { width: pct(full) }, title: t("plain data parallel: {bytes}", { bytes: formatBytes(full) }) }) : null,
    h("span", { class: "memory-measured", style: { width: pct(measured), background: part.colour } }),
    h("span", { class: "memory-expected", style: { left: pct(expected) }, title: t("formula: {bytes}", { bytes: formatBytes(expected) }) }));
}

/** The stage the formulas describe, for a lesson with no `stage` parameter (fsdp2 is stage 3):
 * the first of parameters, gradients, optimizer state whose formula divides by N. */
function stageOfFormulas(events) {
  const sharded = events.findIndex((e) => parseFormula(e?.formula).expr?.endsWith("/N"));
  return sharded < 0 ? undefined : 3 - sharded;
}

export function renderMemory(container, state, { runId, params }) {
  const ranks = state.ranks.map((rs) => rs.rank).filter((r) => PARTS.some((p) => latest(state, p.metric, r)));
  const key = [runId, state.ranks.length, ...MEMORY_METRICS.map((m) => [...(state.rankMetrics.get(m)?.values() || [])].length)].join(",");
  if (!changed(container, key)) return true;
  const stage = params?.stage;
  if (!ranks.length) {
    fill(container, h("p", { class: "empty" },
      t("ZeRO stage {stage}: each rank reports the bytes it holds after its last optimizer step — the bars fill in at the end of the run.", { stage: stage ?? "?" })));
    return true;
  }
  const first = PARTS.map((p) => latest(state, p.metric, ranks[0]));
  const f = parseFormula(first.find(Boolean)?.formula);
  f.psi = first.find((e) => typeof e?.psi === "number")?.psi ?? f.psi;   // the event's Ψ, where the lesson sends it
  const fullOf = (part) => (f.psi && f.bytes[part.letter] ? f.psi * f.bytes[part.letter] : null);
  const scale = Math.max(1, ...PARTS.map(fullOf).filter(Boolean),
    ...ranks.flatMap((r) => PARTS.map((p) => Math.max(latest(state, p.metric, r)?.value || 0, latest(state, p.metric, r)?.expected || 0))));
  const plain = PARTS.reduce((a, p) => a + (fullOf(p) || 0), 0);
  const head = h("p", { class: "memory-head" },
    h("strong", {}, `ZeRO stage ${stage ?? stageOfFormulas(first) ?? "?"}`),
    f.psi ? ` · ${t("Ψ = {psi} parameters", { psi: f.psi.toLocaleString("en-US") })}` : "", f.n ? ` · ${t("N = {n} ranks", f)}` : "",
    f.bytes.P ? ` · ${t("bytes per element: P = {P}, G = {G}, K = {K} (float32; Adam keeps two moments)", f.bytes)}` : "");
  const table = h("table", { class: "memory-table" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "rank")),
      PARTS.map((p, i) => h("th", { scope: "col" }, h("span", { class: "swatch", style: { background: p.colour } }), p.name, " ",
        h("code", { class: "memory-formula" }, parseFormula(first[i]?.formula).expr || "?"))),
      h("th", { scope: "col", class: "num" }, "total"))),
    h("tbody", {}, ranks.map((r) => {
      let total = 0;
      let expectedTotal = 0;
      const cells = PARTS.map((p) => {
        const e = latest(state, p.metric, r);
        if (!e) return h("td", { class: "pending" }, "…");
        total += e.value;
        expectedTotal += e.expected ?? 0;
        const ok = e.expected === undefined || Math.abs(e.value - e.expected) <= 1e-9 * Math.max(1, e.expected);
        return h("td", { class: ["memory-cell", ok ? "pass" : "fail"] },
          bar(p, e.value, e.expected ?? e.value, fullOf(p), scale),
          h("div", { class: "memory-numbers" }, h("strong", {}, formatBytes(e.value)),
            e.expected !== undefined ? h("span", { class: "verdict", title: ok ? "measured = the formula" : "measured differs from the formula" },
              ok ? " ✓" : ` ✗ ${t("formula {bytes}", { bytes: formatBytes(e.expected) })}`) : null));
      });
      return h("tr", { "data-rank": r }, h("th", { scope: "row", class: "memory-rank" }, `rank ${r}`), cells,
        h("td", { class: "num memory-total" }, h("strong", {}, formatBytes(total)),
          plain ? h("div", { class: "memory-saving" }, t("{ratio}× less than plain DP ({bytes})", { ratio: (plain / Math.max(total, 1)).toFixed(1), bytes: formatBytes(plain) })) : null));
    })));
  fill(container, head, table,
    h("div", { class: "memory-legend" },
      h("span", { class: "key" }, h("span", { class: "swatch solid" }), "measured on the rank"),
      h("span", { class: "key" }, h("span", { class: "swatch tick" }), "the formula"),
      h("span", { class: "key" }, h("span", { class: "swatch dashed" }), "plain data parallel: all of it on every rank")),
    f.symbols ? h("p", { class: "memory-symbols" }, "symbols: ", h("code", {}, f.symbols.replace(/^\(|\)$/g, ""))) : null,
    commRow(state, ranks[0], f, stage));
  return true;
}

function commRow(state, rank, f, stage) {
  const e = latest(state, COMM_METRIC, rank);
  if (!e) return h("p", { class: "memory-comm pending" }, "Communication per step arrives with the memory numbers.");
  const ok = e.value === e.expected;
  const multiple = f.psi ? e.value / f.psi : null;
  const expectedMultiple = f.psi && typeof e.expected === "number" ? `${Number((e.expected / f.psi).toFixed(2))}Ψ` : null;
  const how = stage === 3
    ? "all-gather each layer's weights before its forward (Ψ), again before its backward (Ψ), reduce-scatter the gradients (Ψ)"
    : "reduce-scatter the gradients (Ψ), then all-gather the updated pieces (Ψ)";
  return h("div", { class: ["memory-comm", ok ? "pass" : "fail"] },
    h("p", {}, h("span", { class: "label" }, "communicated per step: "),
      h("strong", { class: "comm-elements" }, t("{n} elements", { n: formatNumber(e.value) })),
      multiple ? ` = ${Number(multiple.toFixed(2))}Ψ` : "", " — expected ",
      expectedMultiple ? [h("code", {}, expectedMultiple), " = "] : null, `${formatNumber(e.expected)} `,
      h("span", { class: "verdict" }, ok ? "✓" : "✗")),
    h("p", { class: "memory-how" }, t("{how}. Stages 1 and 2 move what plain DP's all-reduce moves (2Ψ); stage 3 pays one Ψ more to keep only 1/N of the weights.", { how: t(how) })));
}
