/** Playback: while the store says `playing`, one event per tick at the chosen speed. */

import { BASE_EVENTS_PER_SECOND } from "paralab/store.js";

export function bindPlayer(store) {
  let timer = null;
  let period = 0;
  function sync() {
    const { playing, speed } = store.state;
    const want = playing ? 1000 / (BASE_EVENTS_PER_SECOND * speed) : 0;
    if (want === period) return;
    clearInterval(timer);
    timer = null;
    period = want;
    if (playing) timer = setInterval(() => store.tick(), period);
  }
  store.on("playback", sync);
  store.on("run", sync);
}
