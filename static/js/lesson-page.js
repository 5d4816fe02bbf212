/**
 * The lesson page: wires the store, the connection, the controls and the views together.
 * State lives in the store; every frame the views draw `stateAt(log, cursor)`; controls send actions.
 */

import { createStore } from "paralab/store.js";
import { connectRun } from "paralab/connection.js";
import { stateAt } from "paralab/replay.js";
import { bindHover } from "paralab/controls/hover.js";
import { bindKeyboard } from "paralab/controls/keyboard.js";
import { bindPlayer } from "paralab/controls/player.js";
import { bindScrubber } from "paralab/controls/scrubber.js";
import { bindTextSize } from "paralab/controls/text-size.js";
import { readLocation, urlWriter } from "paralab/controls/permalink.js";
import {
  bindParamsToggle, buildParamsForm, clearErrors, readParamsForm, setExpanded, showErrors, writeParamsForm,
} from "paralab/controls/params-form.js";
import { renderChecks } from "paralab/views/checks.js";
import { renderCollective } from "paralab/views/collective.js";
import { renderComm } from "paralab/views/comm.js";
import { renderExplanation } from "paralab/views/explanation.js";
import { renderLanes } from "paralab/views/lanes.js";
import { renderNow } from "paralab/views/now.js";
import { renderRecentRuns } from "paralab/views/recent-runs.js";
import { renderSource } from "paralab/views/source.js";
import { renderFailure, renderRunPill } from "paralab/views/status.js";
import { renderTensors } from "paralab/views/tensors.js";

const page = document.querySelector("[data-lesson]");
const lessonId = page.dataset.lesson;
const maxRanks = Number(page.dataset.maxRanks);
const $ = (selector) => document.querySelector(selector);
const form = $("#run-form");
const runButton = form.querySelector('button[type="submit"]');
const cancelButton = $("#cancel-run");

const store = createStore();
const writeUrl = urlWriter(250);
let lesson = null;
let connection = null;
let connectionState = "idle";

// ---- drawing: at most once per frame, everything from the state at the cursor -------------------
let frame = 0;
function scheduleRender() {
  if (!frame) frame = requestAnimationFrame(render);
}

function render() {
  frame = 0;
  const { run, log, cursor } = store.state;
  const state = stateAt(log, cursor, run?.world_size || 0);
  const ctx = { runId: run?.id || null, worldSize: run?.world_size || 0 };
  renderRunPill($("#run-status"), { run, log, connection: connectionState });
  renderNow($("#now"), state);
  renderLanes($("#lanes"), state);
  renderCollective($("#collective"), state);
  renderTensors($("#tensors"), state, ctx);
  renderChecks($("#checks"), state, ctx);
  renderComm($("#comm"), state);
  renderFailure($("#failure"), state);
  if (lesson) renderSource($("#source"), state, { sources: lesson.sources, onPick: scheduleRender });
  cancelButton.hidden = !run || store.state.final;
  document.body.classList.toggle("has-run", Boolean(run));
  if (run) $("#recent-runs").hidden = true;
  const shown = run ? { worldSize: run.world_size, params: run.params } : readParamsForm(form);
  writeUrl({ worldSize: shown.worldSize ?? shown.world_size, params: shown.params, runId: run?.id,
             seq: cursor >= 0 ? log[cursor].seq : null });
}

for (const name of ["run", "log", "cursor"]) store.on(name, scheduleRender);
window.addEventListener("resize", () => scheduleRender());

// ---- runs -------------------------------------------------------------------------------------------
function openRun(run, { seq = null } = {}) {
  connection?.close();
  setExpanded(form, false);
  store.load(run, { seq });
  connection = connectRun(run.id, {
    since: 0,
    onEvent: (event) => store.append([event]),
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
  const { world_size, params } = readParamsForm(form);
  runButton.disabled = true;
  try {
    const response = await fetch("/api/runs", {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ lesson: lessonId, world_size, params }),
    });
    const body = await response.json().catch(() => ({ detail: response.statusText }));
    if (!response.ok) {
      showErrors(form, body.detail ?? `the server answered ${response.status}`);
      return;
    }
    openRun(body);
  } catch (err) {
    showErrors(form, `could not reach the server: ${err.message}`);
  } finally {
    runButton.disabled = false;
  }
}

async function openRecordedRun(runId, seq) {
  const response = await fetch(`/api/runs/${encodeURIComponent(runId)}`);
  if (!response.ok) {
    showErrors(form, `There is no run ${runId} on this server.`);
    return;
  }
  const run = await response.json();
  if (run.lesson !== lessonId) {
    showErrors(form, `Run ${runId} is a run of another lesson (${run.lesson}).`);
    return;
  }
  writeParamsForm(form, run);
  openRun(run, { seq });
}

cancelButton.addEventListener("click", async () => {
  const run = store.state.run;
  if (run) await fetch(`/api/runs/${encodeURIComponent(run.id)}`, { method: "DELETE" });
});

// ---- start -------------------------------------------------------------------------------------------
bindTextSize($(".text-size"), () => scheduleRender());
bindHover($("#tooltip"));
bindKeyboard(store);
bindPlayer(store);
bindScrubber($("#scrubber"), store);
form.addEventListener("submit", startRun);
bindParamsToggle(form);
form.addEventListener("change", () => { if (!store.state.run) scheduleRender(); });

async function main() {
  const wanted = readLocation();
  const response = await fetch(`/api/lessons/${encodeURIComponent(lessonId)}`);
  lesson = await response.json();
  buildParamsForm(form, lesson, { maxRanks, values: { world_size: wanted.worldSize, params: wanted.params } });
  runButton.disabled = false;
  setExpanded(form, true);
  renderExplanation($("#explanation"), lesson.explanation);
  window.paralab = { store, get connection() { return connection; } };   // for the console and the tests
  if (wanted.runId) await openRecordedRun(wanted.runId, wanted.seq);
  else {
    fetch("/api/runs?limit=50").then((r) => (r.ok ? r.json() : [])).then((runs) => {
      if (!store.state.run) renderRecentRuns($("#recent-runs"), runs, lessonId);
    }).catch(() => {});
  }
  scheduleRender();
}

main();
