/**
 * The checks at the cursor: grouped by what they compare, a row per rank with pass/fail in words and
 * colour and the largest absolute error; a failing row shows this rank's numbers, the reference's and
 * their difference as heatmaps.
 */

import { changed, drawn, fillKept, h, remPx, showNote } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { t, tText } from "paralab/i18n.js";
import { formatNumber } from "paralab/replay.js";
import { cellValue, heatmapCanvas, legend, matrixShape, sharedLimit, wholeRegion } from "paralab/views/heatmap.js";

function difference(a, b) {
  if (!a?.preview?.length || !b?.preview?.length || a.preview.length !== b.preview.length
      || a.preview[0].length !== b.preview[0].length) return null;
  const preview = a.preview.map((row, i) => row.map((v, j) => cellValue(v) - cellValue(b.preview[i][j])));
  const absMax = Math.max(0, ...preview.flat().map(Math.abs).filter(Number.isFinite));
  return { ...a, name: "difference", preview, stats: { abs_max: absMax }, id: null, exact: a.exact && b.exact };
}

function comparison(check, ctx) {
  const [mine, ref] = check.tensors || [];
  if (!mine || !ref) return h("p", { class: "empty" }, "No tensors came with this check.");
  const limit = sharedLimit([mine, ref]);
  const diff = difference(mine, ref);
  const [rows, cols] = matrixShape(mine.shape);
  const box = ctx.box;
  const panel = (title, tensor, lim, rank) => h("figure", { class: "check-map" },
    h("figcaption", {}, title),
    heatmapCanvas({ name: `${tText(check.name)} — ${title}`, rows, cols, regions: [wholeRegion(tensor, rank)], limit: lim, box,
                    outline: rank !== null, runId: tensor.id ? ctx.runId : null }));
  return h("div", { class: "check-compare" },
    h("div", { class: "check-pair" },
      h("div", { class: "check-maps-row" },
        panel(t("rank {rank} (wrong)", check), mine, limit, check.rank),
        panel(t("reference"), ref, limit, null)),
      legend(limit)),
    diff ? h("div", { class: "check-pair" }, panel(t("difference"), diff, diff.stats.abs_max || 1, null), legend(diff.stats.abs_max || 1)) : null);
}

export function renderChecks(container, state, { runId, worldSize }) {
  const rem = remPx();
  const key = [runId, rem, ...[...state.checks.values()].flatMap((g) => [...g.rows.values()].map((e) => e.seq))].join(",");
  if (!changed(container, key)) return;
  const groups = [...state.checks.values()];
  if (!groups.length) {
    showNote(container, h("p", { class: "empty" }, "No checks yet at this step: each rank compares its numbers with the single-process reference at the end."));
    return;
  }
  drawn(container);
  const rows = groups.flatMap((g) => [...g.rows.values()]);
  const failed = rows.filter((e) => !e.passed).length;
  const ranks = worldSize || Math.max(...groups.map((g) => g.rows.size));
  const expected = groups.length * ranks;
  const summary = failed
    ? t("{failed} of {n} checks FAILED", { failed, n: rows.length })
    : rows.length === expected
      ? t(`All {n} checks passed ({checks} ${groups.length === 1 ? "check" : "checks"} × {ranks} ${ranks === 1 ? "rank" : "ranks"})`,
        { n: expected, checks: groups.length, ranks })
      : t("{done} of {n} checks done, all passed so far", { done: rows.length, n: expected });
  const ctx = { runId, box: { maxW: 14 * rem, maxH: 10 * rem, maxCell: 1.2 * rem } };
  fillKept(container, key, () => [
    h("p", { class: ["checks-summary", failed ? "fail" : "pass"], role: "status" }, failed ? "✗ " : "✓ ", summary),
    groups.map((g) => {
      const groupFailed = [...g.rows.values()].some((e) => !e.passed);
      return h("section", { class: ["check-group", groupFailed ? "fail" : "pass"], "data-check": g.name },
        h("h3", {}, g.name),
        h("p", { class: "check-detail" }, t("Compares {detail}.", g)),
        h("table", { class: "check-table" },
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "rank"), h("th", { scope: "col" }, "result"),
            h("th", { scope: "col" }, "max |error|"), h("th", { scope: "col" }, "tolerance"))),
          h("tbody", {}, [...g.rows.values()].sort((a, b) => a.rank - b.rank).map((e, _, rows) => [
            h("tr", { class: ["check-row", e.passed ? "pass" : "fail"], "data-rank": e.rank, style: { "--rank": rankColour(e.rank) } },
              h("td", {}, h("span", { class: "rank-chip" }, `rank ${e.rank}`)),
              h("td", { class: "verdict" }, e.passed ? "✓ passed" : "✗ FAILED"),
              h("td", { class: "num" }, formatNumber(e.max_abs_err)),
              h("td", { class: "num" }, `≤ ${formatNumber(e.atol)}`)),
            e.passed ? null : h("tr", { class: "check-maps" }, h("td", { colspan: 4 },
              // The first failing rank's numbers are open; the others one click away, to keep the list short.
              h("details", { open: rows.find((r) => !r.passed) === e },
                h("summary", {}, t("rank {rank}'s numbers against the reference", e)), comparison(e, ctx)))),
          ]))));
    })]);
}
