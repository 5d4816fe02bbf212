/**
 * A room's websocket, `WS /ws/rooms/{code}` (with `?secret=` for the presenter). The server sends the
 * room's state first, then the current run's events (each once), then changes as they happen.
 *
 * After a drop it reconnects, naming the run and the last seq it holds (`?run=…&since=…`), so nothing
 * arrives twice. An unknown or expired code (close 4404) or a wrong secret (4403) is final: it stops
 * and says why through `onState("refused", message)`.
 */

import { reconnectingSocket } from "paralab/reconnecting-socket.js";
import { socketUrl } from "paralab/root.js";

/**
 * `resume()` → {run, since}: what the page holds, asked at each (re)connection.
 * `onMessage(message)`: each message; `onState(state, detail)`: "connecting", "open" (the room's state
 * has come), "reconnecting", "refused" (with the server's words).
 */
export function connectRoom(code, { secret = null, resume = () => ({}), onMessage, onState = () => {} }) {
  let refusal = null;

  function url() {
    const query = new URLSearchParams();
    if (secret) query.set("secret", secret);
    const { run, since } = resume();
    if (run) {
      query.set("run", run);
      query.set("since", String(since || 0));
    }
    const q = query.toString();
    refusal = null;
    return socketUrl(`/ws/rooms/${encodeURIComponent(code)}${q ? `?${q}` : ""}`);
  }

  return reconnectingSocket({
    url,
    onMessage(data) {
      if (data.type === "state") onState("open");
      if (data.error !== undefined && !data.type) refusal = data;      // {error, code, params}
      onMessage(data);
    },
    onState(state) {
      if (state !== "open") onState(state);        // open for a room: when its state has come
    },
    isFinal: (close) => close.code === 4404 || close.code === 4403,
    onFinal: (close) => onState("refused", { code: close.code, message: refusal || close.reason }),
  });
}
