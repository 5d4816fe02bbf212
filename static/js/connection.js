/**
 * One run's websocket, `WS /ws/runs/{id}?since=N`: every event after seq N, then live ones.
 *
 * After a drop it reconnects with `since` = the last seq it delivered, so no event is lost and none
 * is delivered twice; a gap in the numbering (which the server never sends) is treated as a drop.
 * It closes itself once the run's final status has arrived. Control messages (step mode, cancel) go
 * out on the same socket; the server answers a refused one with `{"error"}`, passed to `onNotice`.
 */

import { FINAL_STATUSES } from "paralab/store.js";

const RETRY_MS = [250, 500, 1000, 2000, 4000];

/**
 * `onEvent(event)` for each new event, in seq order; `onState(state, detail)` with
 * "connecting", "open", "reconnecting", "closed" (the run is over) or "error" (e.g. no such run).
 */
export function connectRun(runId, { since = 0, onEvent, onState = () => {}, onNotice = () => {} }) {
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
      if (event.seq === undefined) {            // the server's own complaint
        if (!event.error) return;
        if (last === 0 && /^no run with id/.test(event.error)) {   // no such run: give up
          stop();
          onState("error", event.error);
        } else onNotice(event.error);            // a refused control message: the run goes on
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
    ws.onclose = (close) => {
      if (ws !== socket || stopped) return;
      if (close.code === 4404) {               // the server said there is no such run
        stop();
        onState("error", close.reason || `no run with id '${runId}'`);
        return;
      }
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
    /** Send a control message, e.g. {op: "step", rank: 2}; false when the socket is not open. */
    send(message) {
      if (!socket || socket.readyState !== WebSocket.OPEN) return false;
      socket.send(JSON.stringify(message));
      return true;
    },
    /** Whether control messages can go out now. */
    get open() {
      return Boolean(socket && socket.readyState === WebSocket.OPEN);
    },
    /** Drop the socket as a network failure would (it reconnects); for trying resumption out. */
    drop() {
      if (socket) socket.close();
    },
  };
}
