/**
 * One run's websocket, `WS /ws/runs/{id}?since=N`: every event after seq N, then live ones.
 *
 * After a drop it reconnects with `since` = the last seq it delivered, so no event is lost and none
 * is delivered twice; a gap in the numbering (which the server never sends) is treated as a drop.
 * It closes itself once the run's final status has arrived. Control messages (step mode, cancel) go
 * out on the same socket; the server answers a refused one with `{"error"}`, passed to `onNotice`.
 */

import { FINAL_STATUSES } from "paralab/store.js";
import { reconnectingSocket } from "paralab/reconnecting-socket.js";

/**
 * `onEvent(event)` for each new event, in seq order; `onState(state, detail)` with
 * "connecting", "open", "reconnecting", "closed" (the run is over) or "error" (e.g. no such run).
 */
export function connectRun(runId, { since = 0, onEvent, onState = () => {}, onNotice = () => {} }) {
  let last = since;

  function onMessage(event) {
    if (event.seq === undefined) {            // the server's own complaint
      if (!event.error) return;
      if (last === 0 && event.code === "run.not_found") {   // no such run: give up
        socket.close();
        onState("error", event);
      } else onNotice(event);                  // a refused control message ({error, code, params}): the run goes on
      return;
    }
    if (event.seq <= last) return;             // already delivered
    if (event.seq !== last + 1) {              // a gap: start again from what we have
      socket.drop();
      return;
    }
    last = event.seq;
    onEvent(event);
    if (event.kind === "run" && FINAL_STATUSES.includes(event.status)) {
      socket.close();
      onState("closed");
    }
  }

  const socket = reconnectingSocket({
    url: () => `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/ws/runs/${encodeURIComponent(runId)}?since=${last}`,
    onMessage,
    onState,
    isFinal: (close) => close.code === 4404,   // the server said there is no such run
    onFinal: (close) => onState("error", close.reason || `no run with id '${runId}'`),
  });

  return {
    /** The last seq delivered. */
    get last() {
      return last;
    },
    /** Close for good (a new run replaces this one). */
    close: () => socket.close(),
    /** Send a control message, e.g. {op: "step", rank: 2}; false when the socket is not open. */
    send: (message) => socket.send(message),
    /** Whether control messages can go out now. */
    get open() {
      return socket.open;
    },
    /** Drop the socket as a network failure would (it reconnects); for trying resumption out. */
    drop: () => socket.drop(),
  };
}
