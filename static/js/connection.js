/**
 * One run's websocket, `WS /ws/runs/{id}?since=N`: every event after seq N, then live ones.
 *
 * After a drop it reconnects with `since` = the last seq it delivered, so no event is lost and none
 * is delivered twice; a gap in the numbering (which the server never sends) is treated as a drop.
 * It closes itself once the run's final status has arrived.
 */

import { FINAL_STATUSES } from "paralab/store.js";

const RETRY_MS = [250, 500, 1000, 2000, 4000];

/**
 * `onEvent(event)` for each new event, in seq order; `onState(state, detail)` with
 * "connecting", "open", "reconnecting", "closed" (the run is over) or "error" (e.g. no such run).
 */
export function connectRun(runId, { since = 0, onEvent, onState = () => {} }) {
  let last = since;
  let socket = null;
  let stopped = false;
  let attempts = 0;
  let retryTimer = null;

  function url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${location.host}/ws/runs/${encodeURIComponent(runId)}?since=${last}`;
  }

  function open() {
    if (stopped) return;
    onState(attempts ? "reconnecting" : "connecting");
    const ws = new WebSocket(url());
    socket = ws;
    ws.onopen = () => {
      attempts = 0;
      onState("open");
    };
    ws.onmessage = (message) => {
      if (ws !== socket) return;
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        return;
      }
      if (event.seq === undefined) {            // the server's own complaint, e.g. no such run
        if (event.error) {
          stop();
          onState("error", event.error);
        }
        return;
      }
      if (event.seq <= last) return;             // already delivered
      if (event.seq !== last + 1) {              // a gap: start again from what we have
        ws.close();
        return;
      }
      last = event.seq;
      onEvent(event);
      if (event.kind === "run" && FINAL_STATUSES.includes(event.status)) {
        stop();
        onState("closed");
      }
    };
    ws.onclose = () => {
      if (ws !== socket || stopped) return;
      socket = null;
      const wait = RETRY_MS[Math.min(attempts, RETRY_MS.length - 1)];
      attempts += 1;
      onState("reconnecting");
      retryTimer = setTimeout(open, wait);
    };
  }

  function stop() {
    stopped = true;
    clearTimeout(retryTimer);
    if (socket) {
      const ws = socket;
      socket = null;
      ws.close();
    }
  }

  open();
  return {
    /** The last seq delivered. */
    get last() {
      return last;
    },
    /** Close for good (a new run replaces this one). */
    close: stop,
    /** Drop the socket as a network failure would (it reconnects); for trying resumption out. */
    drop() {
      if (socket) socket.close();
    },
  };
}
