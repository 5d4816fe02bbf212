/**
 * Communication: what rank 0 put into each collective (and each send) so far — bytes of its begin
 * events — with the bytes each rank sent on the wire (`wire_bytes`, where the events carry it), the call's
 * measured time, algorithm and bus bandwidth and their ratio (nccl-tests' factor; all as the tracer
 * measured them), their total, and the lesson's own prediction (rank 0's `block_comm_bytes_expected`).
 *
 * The time of a collective is the shortest among its members: the last rank to arrive waits for no
 * one, so its time is the call itself; the others' times include waiting for it (in step mode,
 * for the person releasing them).
 */

import { changed, drawn, h, morph, showNote } from "paralab/dom.js";
import { formatRate, formatSeconds } from "paralab/cost-model.js";
import { t } from "paralab/i18n.js";
import { collectiveKey, formatBytes } from "paralab/replay.js";

export const EXPECTED_METRIC = "block_comm_bytes_expected";
// A run of hundreds of calls (a pipeline's sends, a program's loop) lists this many, around the current
// one (else the latest); the totals count them all. Its whole table was a step's time on a big run.
export const MOST_ROWS = 24;

/** The end event that times a call: the member that waited least. */
function timing(row, state) {
  if (row.kind === "p2p") return row.span?.end || null;
  const c = state.collectives.get(collectiveKey(row.begin));
  const ends = c ? [...c.ends.values()].filter((e) => typeof e.duration === "number") : [];
  if (!ends.length) return null;
  return ends.reduce((best, e) => (e.duration < best.duration ? e : best));
}

/** [from, to): the rows listed — all, or `MOST_ROWS` around the current one (else the latest). */
function listed(rows, current) {
  if (rows.length <= MOST_ROWS) return [0, rows.length];
  const middle = current >= 0 ? current : rows.length - 1;
  const to = Math.min(rows.length, Math.max(middle + 1 + MOST_ROWS / 4, MOST_ROWS));
  return [to - MOST_ROWS, to];
}

/** A row saying how many calls the list leaves out before or after it. */
function notListed(n, where) {
  return h("tr", { class: "comm-more" }, h("td", { colspan: 9 },
    t(where === "earlier" ? "… {n} earlier calls (counted in the total)" : "… {n} later calls (counted in the total)", { n })));
}

export function renderComm(container, state, { runId }) {
  const rows = [
    ...state.sent.map((e) => ({ kind: "collective", begin: e, seq: e.seq })),
    ...state.p2p.filter((sp) => sp.rank === 0 && sp.op === "send").map((sp) => ({ kind: "p2p", begin: sp.begin, span: sp, seq: sp.seq })),
  ].sort((a, b) => a.seq - b.seq);
  const expected = state.metrics.get(EXPECTED_METRIC);
  const ends = rows.map((row) => timing(row, state));
  const current = rows.find((row, i) => state.event?.seq === row.seq || state.event?.seq === ends[i]?.seq);
  const [from, to] = listed(rows, rows.indexOf(current));
  const key = [runId, state.ranks.length, expected?.seq, state.final, current?.seq, rows.length, from,
    ...rows.slice(from, to).map((row, i) => `${row.seq}:${ends[from + i]?.seq}`)].join(",");
  if (!changed(container, key)) return;
  if (!rows.length && !expected) {
    showNote(container, h("p", { class: "empty" }, "Nothing communicated yet at this step."));
    return;
  }
  drawn(container);
  const total = rows.reduce((sum, r) => sum + (r.begin.bytes || 0), 0);
  const largest = Math.max(1, ...rows.map((r) => r.begin.bytes || 0), expected?.value || 0);
  const verdict = !expected ? null
    : total === expected.value ? { cls: "pass", text: "✓ measured = expected" }
      : total < expected.value && !state.final ? { cls: "pending", text: t("{bytes} still to come", { bytes: formatBytes(expected.value - total) }) }
        : { cls: "fail", text: t("✗ differs by {bytes}", { bytes: formatBytes(Math.abs(total - expected.value)) }) };
  const th = (text, cls, title) => h("th", { scope: "col", class: cls, title }, text);
  const wire = rows.some((r) => typeof r.begin.wire_bytes === "number");   // the tracer counted the bytes on the wire
  const labels = rows.some((r) => r.begin.label);                          // no labels: no "what for" column
  morph(container,
    h("div", { class: "comm-scroll", tabindex: "0" },   // scrolls sideways from the keyboard too
      h("table", { class: "comm-table" },
        h("caption", {}, "What rank 0 put into each call (nccl-tests' size convention), how long the call took, and its bandwidths"),
        h("thead", {}, h("tr", {}, th("#"), th("call"), labels ? th("what for") : null, th("bytes", "num"),
          th("time", "num", "the shortest time among the members: the last to arrive waits for no one"),
          wire ? th("on the wire", "num", "bytes each rank sent over the links in this call") : null,
          th("algbw", "num", "algorithm bandwidth = bytes / time"),
          th("busbw", "num", "bus bandwidth = algbw × factor (nccl-tests), comparable with the link's speed"),
          th("factor", "num", "busbw / algbw: nccl-tests' factor for this call"))),
        h("tbody", {}, from > 0 ? notListed(from, "earlier") : null, rows.slice(from, to).map((row, k) => {
          const e = row.begin;
          const end = ends[from + k];
          const factor = end?.algbw > 0 && typeof end.busbw === "number" ? end.busbw / end.algbw : null;
          return h("tr", { class: state.event?.seq === e.seq || (end && state.event?.seq === end.seq) ? "current" : null },
            h("td", {}, row.kind === "p2p" ? `→ rank ${e.peer}` : `${e.group} #${e.cseq}`),
            h("td", {}, h("span", { class: `op-badge op-${e.op}` }, e.op.replace(/_/g, "-"))),
            labels ? h("td", { class: "comm-label" }, e.label || "") : null,
            h("td", { class: "num" }, formatBytes(e.bytes || 0),
              h("span", { class: "bar", style: { width: `${(100 * (e.bytes || 0)) / largest}%` }, "aria-hidden": "true" })),
            wire ? h("td", { class: "num wire" }, typeof e.wire_bytes === "number" ? formatBytes(e.wire_bytes) : "") : null,
            h("td", { class: "num time" }, end ? formatSeconds(end.duration) : h("span", { class: "pending" }, "…")),
            h("td", { class: "num" }, end ? formatRate(end.algbw) : ""),
            h("td", { class: "num" }, end ? formatRate(end.busbw) : ""),
            h("td", { class: "num factor" }, factor === null ? "" : String(Number(factor.toFixed(3)))));
        }), to < rows.length ? notListed(rows.length - to, "later") : null),
        h("tfoot", {}, h("tr", {}, h("th", { scope: "row", colspan: labels ? 3 : 2 }, "measured total"),
          h("td", { class: "num comm-total" }, formatBytes(total)), h("td", { colspan: wire ? 5 : 4 }))))),
    expected
      ? h("div", { class: ["comm-expected", verdict.cls] },
          h("p", {}, h("span", { class: "label" }, "expected by the lesson: "),
            h("strong", { class: "comm-expected-value" }, formatBytes(expected.value)), " — ",
            h("span", { class: "verdict" }, verdict.text)),
          h("p", { class: "formula" }, h("span", { class: "label" }, "formula: "), h("code", {}, expected.formula || "")))
      : null);
}
