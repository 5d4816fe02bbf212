/** Playback: while the store says `playing`, one event (or call: the store's `playBy`) per tick at the chosen speed. */

import { BASE_CALLS_PER_SECOND, BASE_EVENTS_PER_SECOND, playUnit } from "paralab/store.js";

export function bindPlayer(store) {
  let timer = null;
  let period = 0;
  function sync() {
    const { playing, speed } = store.state;
    const base = playUnit(store.state) === "call" ? BASE_CALLS_PER_SECOND : BASE_EVENTS_PER_SECOND;
    const want = playing ? 1000 / (base * speed) : 0;
    if (want === period) return;
    clearInterval(timer);
    timer = null;
    period = want;
    if (playing) timer = setInterval(() => store.tick(), period);
  }
  store.on("playback", sync);
  store.on("run", sync);
}
