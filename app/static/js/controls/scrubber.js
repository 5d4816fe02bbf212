/**
 * The scrubber over the event log: first / previous / play-pause / next / last buttons, a range input,
 * the speed, and the counter "seq N / total". It sends actions to the store and shows where it stands.
 */

import { t } from "paralab/i18n.js";

export function bindScrubber(root, store) {
  const $ = (name) => root.querySelector(`[data-action="${name}"]`);
  const range = root.querySelector('input[type="range"]');
  const counter = root.querySelector(".seq-counter");
  const speed = root.querySelector('select[name="speed"]');
  const playBy = root.querySelector('select[name="play-by"]');
  const play = $("play");
  const live = root.querySelector(".live-badge");

  $("first").addEventListener("click", () => store.first());
  $("prev").addEventListener("click", () => store.step(-1));
  $("next").addEventListener("click", () => store.step(1));
  $("last").addEventListener("click", () => store.last());
  play.addEventListener("click", () => (store.state.playing ? store.pause() : store.play()));
  range.addEventListener("input", () => store.seek(Number(range.value) - 1));
  speed.addEventListener("change", () => store.setSpeed(Number(speed.value)));
  playBy?.addEventListener("change", () => store.setPlayBy(playBy.value));

  function render() {
    const { log, cursor, playing, follow, final, run } = store.state;
    const total = log.length;
    const seq = cursor >= 0 ? log[cursor].seq : 0;
    range.max = String(Math.max(total, 1));
    range.min = "1";
    range.value = String(Math.max(seq, 1));
    range.disabled = total === 0;
    range.setAttribute("aria-valuetext", t("event {seq} of {total}", { seq, total }));
    counter.textContent = `seq ${seq} / ${total}`;
    play.textContent = t(playing ? "❚❚ Pause" : "▶ Play");
    play.setAttribute("aria-pressed", String(playing));
    for (const name of ["first", "prev"]) $(name).disabled = cursor <= 0;
    for (const name of ["next", "last"]) $(name).disabled = cursor >= total - 1;
    play.disabled = total === 0;
    speed.value = String(store.state.speed);
    if (playBy) playBy.value = store.state.playBy;
    live.hidden = !(run && !final && follow);
  }
  for (const name of ["cursor", "log", "playback", "run"]) store.on(name, render);
  render();
}
