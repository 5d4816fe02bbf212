/**
 * The lesson page: wires the store, the connection, the controls and the views together.
 * State lives in the store; every frame the views draw `stateAt(log, cursor)`; controls send actions.
 */

import { onResize, textSizeChanged } from "paralab/dom.js";
import { createStore } from "paralab/store.js";
import { connectRun, prefetchEvents } from "paralab/connection.js";
import { currentLang, lessonField, t, tPlural, useLessonTexts } from "paralab/i18n.js";
import { foldCache, stateAt } from "paralab/replay.js";
import { bindHover } from "paralab/controls/hover.js";
import { bindKeyboard } from "paralab/controls/keyboard.js";
import { bindFollowEvent } from "paralab/controls/follow-event.js";
import { bindPanelTools, renderTables } from "paralab/controls/panel-tools.js";
import { bindPlayer } from "paralab/controls/player.js";
import { bindScrubber } from "paralab/controls/scrubber.js";
import { createStepper } from "paralab/controls/stepper.js";
import { bindTextSize } from "paralab/controls/text-size.js";
import { readLocation, urlWriter } from "paralab/controls/permalink.js";
import {
  bindParamsToggle, buildParamsForm, clearErrors, linkableParams, readParamsForm, setExpanded, showErrors, translateParamHelp,
  writeParamsForm,
} from "paralab/controls/params-form.js";
import { renderExplanation, showExplained } from "paralab/views/explanation.js";
import { renderNow } from "paralab/views/now.js";
import { drawPanels, mountPanels } from "paralab/views/panels.js";
import { renderRecentRuns } from "paralab/views/recent-runs.js";
import { renderSource } from "paralab/views/source.js";
import { liveStatus, renderFailure, renderRunPill } from "paralab/views/status.js";
import { hangCountdown } from "paralab/views/hang-countdown.js";
import { startTimings, timed, timings } from "paralab/timings.js";
import { markRan } from "paralab/progress.js";
import { renderStepper } from "paralab/views/stepper.js";
import { here } from "paralab/root.js";

const page = document.querySelector("[data-lesson]");
let lessonId = page.dataset.lesson;
const maxRanks = Number(page.dataset.maxRanks);
const $ = (selector) => document.querySelector(selector);
const form = $("#run-form");
const runButton = form.querySelector('button[type="submit"]');
const cancelButton = $("#cancel-run");
const stepToggle = $("#step-mode");
const panels = mountPanels($("#recent-runs"));   // the pictures: one panel per view of views/registry.js

export const store = createStore();

/**
 * Where the lesson and its runs come from: the server, for this page. A lecture room (room-page.js) and
 * an exported recording (offline-page.js) render this page with `data-host` set, import this module and
 * replace these before they call `useLesson`: runs then start and stream through the room's socket, or
 * come from the file itself.
 */
export const host = {
  name: page.dataset.host || null,
  fetchLesson: async (id) => (await fetch(here(`/api/lessons/${encodeURIComponent(id)}?lang=${currentLang()}`))).json(),
  start: null,                       // (body) → start a run elsewhere; null: POST /api/runs
  cancel: null,                      // (run) → cancel it elsewhere (a room: its socket); null: DELETE /api/runs/{id}
  connect: (run, handlers) => connectRun(run.id, { since: 0, ...handlers }),
  writeUrl: !page.dataset.host,      // the address bar names the run and step (not in a room)
};
const writeUrl = urlWriter(250);
let lesson = null;
let connection = null;
let judgedShown = false;   // the run shown is a practice problem's submission, as the judge ran it
let connectionState = "idle";

/** The state at the end of the log: what the ranks are doing now (what the stepper's buttons act on). */
function liveState() {
  const { run, log } = store.state;
  return stateAt(log, log.length - 1, run?.world_size || 0);
}

const stepper = createStepper({ store, connection: () => connection, live: liveState, onChange: () => scheduleRender() });

// ---- drawing: at most once per frame, everything from the state at the cursor -------------------
let frame = 0;
const foldAt = foldCache();        // a step forwards folds the events stepped over, not the whole log again
export function scheduleRender() {
  if (!frame) frame = requestAnimationFrame(render);
}

function render() {
  frame = 0;
  const { run, log, cursor } = store.state;
  startTimings();
  const state = timed("fold", () => foldAt(log, cursor, run?.world_size || 0));
  const ctx = { runId: run?.id || null, worldSize: run?.world_size || 0, params: run?.params, contents: store.state.contents };
  // A live step-mode run: the ranks as they are now (what the stepper's buttons act on), folded once.
  const live = run?.step && !store.state.final ? (cursor === log.length - 1 ? state : liveState()) : null;
  renderPill(live);
  timed("now", () => renderNow($("#now"), state));
  timed("stepper", () => renderStepperPanel(state, live));
  drawPanels(panels, state, ctx);
  timed("failure", () => renderFailure($("#failure"), state));
  timed("tables", () => renderTables(state, ctx));
  if (lesson) timed("source", () => renderSource($("#source"), state, { sources: runSources(run) || lesson.sources, onPick: scheduleRender }));
  timed("explanation", () => showExplained($("#explanation"), log, cursor));
  cancelButton.hidden = !run || store.state.final;
  if (run && store.state.final && liveStatus(log)?.status === "done") markRan(run.lesson);
  document.body.classList.toggle("has-run", Boolean(run));
  document.body.classList.toggle("step-run", Boolean(run?.step));
  if (run) $("#recent-runs").hidden = true;
  const shown = run ? { worldSize: run.world_size, params: run.params } : readParamsForm(form);
  if (host.writeUrl && lesson) writeUrl({ worldSize: shown.worldSize ?? shown.world_size, params: linkableParams(form, shown.params), runId: run?.id,
             seq: cursor >= 0 ? log[cursor].seq : null });
}

function renderPill(live = null) {
  const { run, log } = store.state;
  const note = stepNote(live) ?? hangCountdown(run, log, liveStatus(log)?.status);
  renderRunPill($("#run-status"), { run, log, connection: connectionState, note });
}

// A quiet running run counts its seconds towards the hang timeout in the pill (nothing else changes).
setInterval(() => { if (store.state.run && !store.state.final && !store.state.run.step) renderPill(); }, 1000);

/** A run of one's own program shows its own file (the `script` lesson's run carries its text, and a
 * torchrun job's the script its ranks ran). */
function runSources(run) {
  if (run?.lesson !== "script" && run?.lesson !== "torchrun") return null;
  const { source, filename } = run.params || {};
  return typeof source === "string" && typeof filename === "string" ? [{ path: filename, text: source }] : null;
}

/** " · 3 ranks at gates" in the header pill while a step-mode run waits for its user. */
function stepNote(live) {
  if (!live) return null;
  const waiting = live.ranks.filter((rs) => rs.gate).length;
  return waiting ? ` · ${tPlural(waiting, "{n} rank at a gate", "{n} ranks at a gate")}` : null;
}

function renderStepperPanel(state, live) {
  const { run, log, cursor } = store.state;
  const panel = $("#stepper");
  panel.hidden = !run?.step;
  if (!run?.step) return;
  const atEnd = cursor === log.length - 1;
  renderStepper(panel, live || state, {
    live: Boolean(live), stepping: stepper.stepping, notice: stepper.notice, canSend: Boolean(connection?.open),
    behind: live && !atEnd && cursor >= 0 ? { seq: log[cursor].seq, total: log.length } : null,
    actions: stepper.actions,
  });
}

for (const name of ["run", "log", "cursor"]) store.on(name, scheduleRender);
window.addEventListener("resize", () => scheduleRender());
onResize(() => scheduleRender());

// ---- runs -------------------------------------------------------------------------------------------
export function openRun(run, { seq = null } = {}) {
  connection?.close();
  setExpanded(form, false);
  stepper.reset();
  store.load(run, { seq });
  connection = host.connect(run, {
    onEvent: (event) => store.append([event]),
    onEvents: (events) => store.append(events),
    onNotice: (text) => stepper.say(text),
    onState: (state, detail) => {
      connectionState = state;
      if (state === "error") showErrors(form, detail);
      scheduleRender();
    },
  });
}

async function startRun(event) {
  event.preventDefault();
  clearErrors(form);
  if (judgedShown) {                                  // the program runs again as one's own, not judged
    judgedShown = false;
    showLessonWords();
  }
  const { world_size, params } = readParamsForm(form);
  if (host.start) return host.start({ lesson: lessonId, world_size, params, step: stepToggle.checked });
  runButton.disabled = true;
  try {
    const response = await fetch(here("/api/runs"), {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ lesson: lessonId, world_size, params, step: stepToggle.checked }),
    });
    const body = await response.json().catch(() => ({ detail: response.statusText }));
    if (!response.ok) {
      showErrors(form, Array.isArray(body.detail) || body.code ? (Array.isArray(body.detail) ? body.detail : body)
        : body.detail ?? t("the server answered {status}", response));
      return;
    }
    runButton.blur();          // Enter (release all, in step mode) must not press Run again
    openRun(body);
  } catch (err) {
    showErrors(form, t("could not reach the server: {error}", { error: err.message }));
  } finally {
    runButton.disabled = false;
  }
}

/** Open recorded run `runId` at `seq`; `described`: its description as `describeRun` gives it, asked for already. */
async function openRecordedRun(runId, seq, described) {
  const run = await described;
  if (!run) {
    showErrors(form, t("There is no run {run} on this server.", { run: runId }));
    return;
  }
  if (run.lesson !== lessonId) {
    showErrors(form, t("Run {run} is a run of another lesson ({lesson}).", { run: runId, lesson: run.lesson }));
    return;
  }
  writeParamsForm(form, run);
  stepToggle.checked = Boolean(run.step);
  judgedShown = runId.startsWith("judged-");       // a practice problem's submission, as the judge ran it
  showLessonWords();
  openRun(run, { seq });
}

/** Run `runId`'s description (`GET /api/runs/{id}`), or null where this server has no such run. */
async function describeRun(runId) {
  const response = await fetch(here(`/api/runs/${encodeURIComponent(runId)}`));
  return response.ok ? response.json() : null;
}

cancelButton.addEventListener("click", async () => {
  const run = store.state.run;
  if (run && host.cancel) return host.cancel(run);   // a room's run obeys its presenter's socket only
  if (run) await fetch(here(`/api/runs/${encodeURIComponent(run.id)}`), { method: "DELETE" });
});

// ---- start -------------------------------------------------------------------------------------------
bindTextSize($(".text-size"), () => {
  textSizeChanged();
  scheduleRender();
});
bindHover($("#tooltip"));
bindKeyboard(store);
bindFollowEvent(store);
bindPlayer(store);
bindScrubber($("#scrubber"), store);
bindPanelTools(store, { exportRun: host.name !== "offline" });
form.addEventListener("submit", startRun);
bindParamsToggle(form);
form.addEventListener("change", () => { if (!store.state.run) scheduleRender(); });

/** Show lesson `id`: its form (from `values`), title, source and explanation. A room switches lessons so.
 *  `before`: what to have before the lesson is shown (a run to open with it: one drawing, not the lesson's then the run's). */
export async function useLesson(id, { values = {}, before = null } = {}) {
  const fetched = await fetchInCurrentLang(id);
  await before;
  lesson = fetched;
  useLessonTexts(lesson.texts);
  lessonId = page.dataset.lesson = id;
  buildParamsForm(form, lesson, { maxRanks, values });
  runButton.disabled = false;
  setExpanded(form, true);
  showLessonWords();
  renderExplanation($("#explanation"), lesson.explanation, id, lesson.explanation_steps);
  scheduleRender();
  return lesson;
}

/** The lesson as the server gives it in the interface's language: asked again if the language changed
 * while it was being asked (a switch before the page's first answer came would leave the English). */
async function fetchInCurrentLang(id) {
  for (;;) {
    const lang = currentLang();
    const fetched = await host.fetchLesson(id);
    if (lang === currentLang()) return fetched;
  }
}

/** The lesson's title and summary in the current language (its texts.<lang>.json, else the English); a
 * judged submission's replay says it is one (the playground's words read as one's own program). */
function showLessonWords() {
  $(".lesson-title").textContent = judgedShown ? t("Your submission, as the judge ran it") : lessonField("title", lesson.title);
  $(".lesson-summary").textContent = judgedShown
    ? t("The run the judge watched, every call of your code on its ranks: step through it. Run runs the program again as your own, not judged.")
    : lessonField("summary", lesson.summary);
}

export const currentLesson = () => lesson;

// The views' sentences and the explanation in the interface's language (the explanation where the lesson has one).
document.addEventListener("paralab:lang", async () => {
  setExpanded(form, form.querySelector(".params-toggle").getAttribute("aria-expanded") === "true");
  scheduleRender();
  if (!lesson) return;
  showLessonWords();
  translateParamHelp(form, lesson);
  const shown = lessonId;
  let again;
  try {
    again = await fetchInCurrentLang(shown);
  } catch {
    return;   // not fetched (the connection dropped): the explanation stays in the language it has
  }
  if (shown === lessonId) {
    Object.assign(lesson, { explanation: again.explanation, explanation_steps: again.explanation_steps });
    renderExplanation($("#explanation"), lesson.explanation, shown, lesson.explanation_steps);
  }
});

window.paralab = { store, timings, get connection() { return connection; } };   // for the console and the tests

async function main() {
  const wanted = readLocation();
  // A page opened on a run asks for the run's events and description beside the lesson, not after it, and
  // shows the lesson once they are here: its first drawing is then the run's. Drawn alone first, or with the run
  // and no events yet, the lesson cost ~100 ms of a big run's opening (and delayed reading the events in).
  const described = wanted.runId ? describeRun(wanted.runId).catch(() => null) : null;
  const recorded = wanted.runId ? prefetchEvents(wanted.runId) : null;
  await useLesson(lessonId, { values: { world_size: wanted.worldSize, params: wanted.params },
                              before: Promise.all([described, recorded]) });
  if (wanted.runId) await openRecordedRun(wanted.runId, wanted.seq, described);
  else {
    fetch(here("/api/runs?limit=50")).then((r) => (r.ok ? r.json() : [])).then((runs) => {
      if (!store.state.run) renderRecentRuns($("#recent-runs"), runs, lessonId);
    }).catch(() => {});
  }
  scheduleRender();
}

if (!host.name) main();
