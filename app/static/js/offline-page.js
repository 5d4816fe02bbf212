/**
 * An exported run (GET /api/runs/{id}/export.html), replayed from the log written into the file: the
 * lesson page's views, scrubber and keys, with no server and no network. `#seq=N` in the address opens
 * the recording at event N (by default its first event, ready to step through).
 */

import { host, openRun, store, useLesson } from "paralab/lesson-page.js";
import { currentLang } from "paralab/i18n.js";

const recording = JSON.parse(document.getElementById("paralab-recording").textContent);
const { run, lesson, events } = recording;

host.fetchLesson = async () => ({ ...lesson, explanation: lesson.explanations?.[currentLang()] || lesson.explanation || "" });
host.start = () => {};
host.connect = (shown, { onState }) => {
  onState("closed");
  return { send: () => false, open: false, last: events.length, close() {}, drop() {} };
};

async function main() {
  await useLesson(lesson.id, { values: { world_size: run.world_size, params: run.params } });
  for (const el of document.querySelectorAll("#run-form input, #run-form select")) el.disabled = true;
  const seq = Number(new URLSearchParams(location.hash.slice(1)).get("seq"));
  openRun(run, { seq: Number.isInteger(seq) && seq > 0 ? seq : 1 });
  store.append(events);
  // The address remembers the step, so a reload (or a copied link to the file) opens it there.
  let timer = null;
  store.on("cursor", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const { log, cursor } = store.state;
      if (cursor >= 0) history.replaceState(history.state, "", `#seq=${log[cursor].seq}`);
    }, 250);
  });
}

main();
