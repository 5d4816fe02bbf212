/**
 * One run's websocket, `WS /ws/runs/{id}?since=N`: every event after seq N, then live ones.
 *
 * After a drop it reconnects with `since` = the last seq it delivered, so no event is lost and none
 * is delivered twice; a gap in the numbering (which the server never sends) is treated as a drop.
 * It closes itself once the run's final status has arrived. Control messages (step mode, cancel) go
 * out on the same socket; the server answers a refused one with `{"error"}`, passed to `onNotice`.
 *
 * What is recorded already comes first in one piece, `GET /api/runs/{id}/events` (JSON lines), handed
 * over as one batch: thousands of websocket messages, each a task of its own with the page drawing
 * between them, made a recorded run of 7,000 events take seconds to open. A finished run needs no
 * socket after that; a live one opens it from the last seq the batch held.
 */

import { FINAL_STATUSES } from "paralab/store.js";
import { reconnectingSocket } from "paralab/reconnecting-socket.js";
import { here, socketUrl } from "paralab/root.js";

/**
 * `onEvent(event)` for each new event, in seq order (or `onEvents(events)` for the recorded ones, in one
 * batch, where given); `onState(state, detail)` with
 * "connecting", "open", "reconnecting", "closed" (the run is over) or "error" (e.g. no such run).
 */
export function connectRun(runId, { since = 0, onEvent, onEvents = (events) => events.forEach(onEvent),
                                    onState = () => {}, onNotice = () => {} }) {
  let last = since;
  let socket = null;
  let closed = false;

  function onMessage(event) {
    if (event.seq === undefined) {            // the server's own complaint
      if (!event.error) return;
      if (last === 0 && event.code === "run.not_found") {   // no such run: give up
        closed = true;
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
      closed = true;
      socket.close();
      onState("closed");
    }
  }

  function openSocket() {
    if (closed) return;
    socket = reconnectingSocket({
      url: () => socketUrl(`/ws/runs/${encodeURIComponent(runId)}?since=${last}`),
      onMessage,
      onState,
      isFinal: (close) => close.code === 4404,   // the server said there is no such run
      onFinal: (close) => onState("error", close.reason || `no run with id '${runId}'`),
    });
  }

  /** The recorded events in one batch; then the socket, unless the batch ended the run. */
  async function preload() {
    onState("connecting");
    const early = last === 0 ? prefetched.get(runId) : null;
    prefetched.delete(runId);
    const recorded = await (early || recordedEvents(runId, last));
    if (closed) return;
    const fresh = [];
    for (const event of recorded) {
      if (event.seq !== last + 1) break;       // the log is contiguous; anything else the socket resends
      fresh.push(event);
      last = event.seq;
    }
    if (fresh.length) onEvents(fresh);
    const end = fresh.at(-1);
    if (end && end.kind === "run" && FINAL_STATUSES.includes(end.status)) {
      closed = true;
      onState("closed");
      return;
    }
    openSocket();
  }
  preload();

  return {
    /** The last seq delivered. */
    get last() {
      return last;
    },
    /** Close for good (a new run replaces this one). */
    close: () => {
      closed = true;
      socket?.close();
    },
    /** Send a control message, e.g. {op: "step", rank: 2}; false when the socket is not open. */
    send: (message) => Boolean(socket?.send(message)),
    /** Whether control messages can go out now. */
    get open() {
      return Boolean(socket?.open);
    },
    /** Drop the socket as a network failure would (it reconnects); for trying resumption out. */
    drop: () => socket?.drop(),
  };
}

const prefetched = new Map();    // run id → its recorded events, asked for before the page connected

/** Start fetching run `runId`'s recorded events now: a page opened on a run asks for them while it loads
 *  its lesson and the run's description, not after. The next `connectRun` to it takes them. Returns them
 *  (a promise, never rejected): the page shows the lesson once they are here. */
export function prefetchEvents(runId) {
  if (!prefetched.has(runId)) prefetched.set(runId, recordedEvents(runId, 0));
  return prefetched.get(runId);
}

/** The run's recorded events after `since`, parsed; none where they cannot be had (the socket then says why). */
async function recordedEvents(runId, since) {
  try {
    const response = await fetch(here(`/api/runs/${encodeURIComponent(runId)}/events?since=${since}`));
    if (!response.ok) return [];
    return (await response.text()).split("\n").filter(Boolean).map((line) => JSON.parse(line));
  } catch {
    return [];
  }
}
