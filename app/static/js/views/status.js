/**
 * Run status. The header pill says how the run itself stands (queued with its position, running with
 * a spinner, done, failed, cancelled); the failure panel shows, at the cursor, which rank failed,
 * where, with what message and traceback.
 */

import { changed, fill, h } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { t, tMessage, tPlural } from "paralab/i18n.js";
import { formatNumber } from "paralab/replay.js";
import { hangReport } from "paralab/views/hang.js";

const WORDS = { none: "no run yet", queued: "queued", running: "running", paused: "paused", done: "done", failed: "failed", cancelled: "cancelled" };

/** The run's latest status in the whole log (not the cursor): {status, position, error}. */
export function liveStatus(log) {
  for (let i = log.length - 1; i >= 0; i--) if (log[i].kind === "run") return log[i];
  return null;
}

let failedCache = { log: null, length: 0, failed: [] };

/** The failed `check` events of the whole log (kept between calls: the log only grows). */
export function failedChecks(log) {
  if (failedCache.log !== log || failedCache.length > log.length) failedCache = { log, length: 0, failed: [] };
  for (let i = failedCache.length; i < log.length; i++) {
    if (log[i].kind === "check" && !log[i].passed) failedCache.failed.push(log[i]);
  }
  failedCache.length = log.length;
  return failedCache.failed;
}

/** "W1 shard gradient (ranks 0, 1; worst |error| 0.31)" for each failed check, worst first. */
export function failedSummary(failed) {
  const byName = new Map();
  for (const e of failed) {
    const row = byName.get(e.name) || { name: e.name, ranks: [], worst: 0 };
    row.ranks.push(e.rank);
    const err = Number(e.max_abs_err);
    row.worst = Number.isFinite(err) ? Math.max(row.worst, err) : (e.max_abs_err ?? row.worst);
    byName.set(e.name, row);
  }
  return [...byName.values()].sort((a, b) => (Number(b.worst) || Infinity) - (Number(a.worst) || Infinity) || 0);
}

export function renderRunPill(pill, { run, log, connection, note = null }) {
  const last = liveStatus(log);
  const failed = failedChecks(log);
  const status = last ? last.status : run ? "queued" : "none";
  const busy = status === "queued" || status === "running";
  pill.dataset.status = status === "done" && failed.length ? "checks-failed" : status;
  const detail = status === "queued" && last?.position ? ` ${t("(position {position})", last)}`
    : run && status !== "none" ? ` ${t("· {n} events", { n: log.length })}` : "";
  fill(pill,
    busy ? h("span", { class: "spinner", "aria-hidden": "true" }) : null,
    h("span", { class: "run-word" }, status === "none" ? "No run yet" : `Run ${WORDS[status] || status}`),
    failed.length ? h("span", { class: "run-checks-failed" }, ` · ${t("{n} checks FAILED", { n: failed.length })}`) : null,
    note ? h("span", { class: "run-note" }, note) : null,       // before the counts: a narrow header cuts the end
    detail,
    run ? h("span", { class: "run-id", title: t("run {id}", run) }, ` ${tPlural(run.world_size, "· {n} rank", "· {n} ranks")}`) : null,
    connection === "reconnecting" ? h("span", { class: "conn" }, " · reconnecting…") : null);
}

function failedChecksPanel(failed) {
  const rows = failedSummary(failed);
  return [
    h("h2", {}, t("{n} checks FAILED", { n: failed.length })),
    h("ul", { class: "failed-checks" }, rows.map((row) => h("li", { "data-check": row.name },
      h("strong", {}, row.name), " ",
      t("on ranks {ranks}; worst |error| {worst}", { ranks: row.ranks.sort((a, b) => a - b).join(", "), worst: formatNumber(row.worst) })))),
    h("p", {}, h("a", { href: "#h-checks" }, t("Each rank's numbers against the reference, in the checks panel"))),
  ];
}

export function renderFailure(container, state) {
  const { status, error } = state.run;
  const failed = [...state.checks.values()].flatMap((g) => [...g.rows.values()]).filter((e) => !e.passed);
  if (status !== "failed" && status !== "cancelled") {
    container.hidden = !failed.length;
    container.classList.remove("hang");
    if (changed(container, failed.map((e) => e.seq).join(","))) fill(container, failed.length ? failedChecksPanel(failed) : []);
    return;
  }
  changed(container, "run-failed");   // drawn below without a key: a later checks panel must draw anew
  container.hidden = false;
  const e = error || {};
  container.classList.toggle("hang", e.kind === "hang");
  if (e.kind === "hang") {
    fill(container, hangReport(e));
    return;
  }
  const rankErrors = state.ranks.filter((rs) => rs.error);
  fill(container,
    h("h2", {}, status === "failed" ? "The run failed" : "The run was cancelled"),
    h("dl", { class: "failure-facts" },
      e.rank !== undefined && e.rank !== null
        ? [h("dt", {}, "rank"), h("dd", {}, h("span", { class: "rank-chip", style: { "--rank": rankColour(e.rank) } }, `rank ${e.rank}`))]
        : null,
      [h("dt", {}, "what"), h("dd", { class: "failure-message" }, e.message ? tMessage(e) : t(status))],
      e.site ? [h("dt", {}, "where"), h("dd", {}, h("code", {}, e.site))] : null,
      e.ranks ? [h("dt", {}, "last lines"), h("dd", {}, Object.entries(e.ranks).map(([r, site]) =>
        h("div", {}, `rank ${r}: `, h("code", {}, site || t("no call yet")))))] : null),
    e.traceback ? h("details", { class: "traceback", open: true }, h("summary", {}, "traceback"), h("pre", {}, e.traceback)) : null,
    rankErrors.filter((rs) => rs.rank !== e.rank).length
      ? h("details", { class: "other-errors" }, h("summary", {}, "what the other ranks reported"),
          rankErrors.filter((rs) => rs.rank !== e.rank).map((rs) => h("p", {}, `rank ${rs.rank}: ${rs.error.message}`)))
      : null);
}
