/**
 * The seconds a running run has been quiet, shown in the header pill while the server waits to call it
 * hung: "no progress for 4 s — called hung at 10 s". The server's rule (app/run_outcome.py) is the run's
 * `hang_timeout_s` without an event while some rank sits inside a call; a step-mode run's quiet is a
 * person's pause, so it gets no countdown.
 */

import { t } from "paralab/i18n.js";

/** Quiet shorter than this is ordinary work between calls: no countdown yet. */
const SHOW_AFTER_S = 2;

let seen = { log: null, length: -1, at: 0 };

/** " · no progress for 4 s — called hung at 10 s", or null. `now` in milliseconds (performance.now()). */
export function hangCountdown(run, log, status, now = performance.now()) {
  if (seen.log !== log || seen.length !== log.length) seen = { log, length: log.length, at: now };
  if (!run || run.step || status !== "running" || !run.hang_timeout_s) return null;
  const quiet = Math.floor((now - seen.at) / 1000);
  if (quiet < SHOW_AFTER_S) return null;
  return ` · ${t("no progress for {quiet} s — called hung at {limit} s", { quiet, limit: run.hang_timeout_s })}`;
}
