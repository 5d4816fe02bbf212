/**
 * Communication volume: what rank 0 sent in each collective so far (bytes of its begin events), their
 * total, and the lesson's own prediction (rank 0's `block_comm_bytes_expected` metric and formula).
 */

import { fill, h } from "paralab/dom.js";
import { formatBytes } from "paralab/replay.js";

export const EXPECTED_METRIC = "block_comm_bytes_expected";

export function renderComm(container, state) {
  const sent = state.sent;
  const expected = state.metrics.get(EXPECTED_METRIC);
  if (!sent.length && !expected) {
    fill(container, h("p", { class: "empty" }, "Nothing communicated yet at this step."));
    return;
  }
  const total = sent.reduce((sum, e) => sum + (e.bytes || 0), 0);
  const largest = Math.max(1, ...sent.map((e) => e.bytes || 0), expected?.value || 0);
  const verdict = !expected ? null
    : total === expected.value ? { cls: "pass", text: "✓ measured = expected" }
      : total < expected.value && !state.final ? { cls: "pending", text: `${formatBytes(expected.value - total)} still to come` }
        : { cls: "fail", text: `✗ differs by ${formatBytes(Math.abs(total - expected.value))}` };
  fill(container,
    h("table", { class: "comm-table" },
      h("caption", {}, "Bytes rank 0 put into each collective (nccl-tests' size convention)"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "#"), h("th", { scope: "col" }, "collective"),
        h("th", { scope: "col" }, "what for"), h("th", { scope: "col", class: "num" }, "bytes"))),
      h("tbody", {}, sent.map((e) => h("tr", { class: state.event?.seq === e.seq ? "current" : null },
        h("td", {}, `${e.group} #${e.cseq}`),
        h("td", {}, h("span", { class: `op-badge op-${e.op}` }, e.op.replace(/_/g, "-"))),
        h("td", {}, e.label || ""),
        h("td", { class: "num" }, formatBytes(e.bytes || 0),
          h("span", { class: "bar", style: { width: `${(100 * (e.bytes || 0)) / largest}%` }, "aria-hidden": "true" }))))),
      h("tfoot", {}, h("tr", {}, h("th", { scope: "row", colspan: 3 }, "measured total"),
        h("td", { class: "num comm-total" }, formatBytes(total))))),
    expected
      ? h("div", { class: ["comm-expected", verdict.cls] },
          h("p", {}, h("span", { class: "label" }, "expected by the lesson: "),
            h("strong", { class: "comm-expected-value" }, formatBytes(expected.value)), " — ",
            h("span", { class: "verdict" }, verdict.text)),
          h("p", { class: "formula" }, h("span", { class: "label" }, "formula: "), h("code", {}, expected.formula || "")))
      : h("p", { class: "empty" }, "The lesson's expected volume arrives with rank 0's metric, near the end."));
}
