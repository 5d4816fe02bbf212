/**
 * Run status. The header pill says how the run itself stands (queued with its position, running with
 * a spinner, done, failed, cancelled); the failure panel shows, at the cursor, which rank failed,
 * where, with what message and traceback.
 */

import { fill, h } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { t, tServer } from "paralab/i18n.js";
import { hangReport } from "paralab/views/hang.js";

const WORDS = { none: "no run yet", queued: "queued", running: "running", paused: "paused", done: "done", failed: "failed", cancelled: "cancelled" };

/** The run's latest status in the whole log (not the cursor): {status, position, error}. */
export function liveStatus(log) {
  for (let i = log.length - 1; i >= 0; i--) if (log[i].kind === "run") return log[i];
  return null;
}

export function renderRunPill(pill, { run, log, connection, note = null }) {
  const last = liveStatus(log);
  const status = last ? last.status : run ? "queued" : "none";
  const busy = status === "queued" || status === "running";
  pill.dataset.status = status;
  const detail = status === "queued" && last?.position ? ` ${t("(position {position})", last)}`
    : status === "running" ? ` · ${log.length} events` : run && status !== "none" ? ` · ${log.length} events` : "";
  fill(pill,
    busy ? h("span", { class: "spinner", "aria-hidden": "true" }) : null,
    h("span", { class: "run-word" }, status === "none" ? "No run yet" : `Run ${WORDS[status] || status}`),
    detail,
    run ? h("span", { class: "run-id", title: t("run {id}", run) }, ` · ${run.world_size} rank${run.world_size === 1 ? "" : "s"}`) : null,
    note ? h("span", { class: "run-note" }, note) : null,
    connection === "reconnecting" ? h("span", { class: "conn" }, " · reconnecting…") : null);
}

export function renderFailure(container, state) {
  const { status, error } = state.run;
  if (status !== "failed" && status !== "cancelled") {
    container.hidden = true;
    container.replaceChildren();
    return;
  }
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
      [h("dt", {}, "what"), h("dd", { class: "failure-message" }, e.message ? tServer(e.message) : t(status))],
      e.site ? [h("dt", {}, "where"), h("dd", {}, h("code", {}, e.site))] : null,
      e.ranks ? [h("dt", {}, "last lines"), h("dd", {}, Object.entries(e.ranks).map(([r, site]) =>
        h("div", {}, `rank ${r}: `, h("code", {}, site || t("no call yet")))))] : null),
    e.traceback ? h("details", { class: "traceback", open: true }, h("summary", {}, "traceback"), h("pre", {}, e.traceback)) : null,
    rankErrors.filter((rs) => rs.rank !== e.rank).length
      ? h("details", { class: "other-errors" }, h("summary", {}, "what the other ranks reported"),
          rankErrors.filter((rs) => rs.rank !== e.rank).map((rs) => h("p", {}, `rank ${rs.rank}: ${rs.error.message}`)))
      : null);
}
