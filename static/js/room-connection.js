/**
 * A room's websocket, `WS /ws/rooms/{code}` (with `?secret=` for the presenter). The server sends the
 * room's state first, then the current run's events (each once), then changes as they happen.
 *
 * After a drop it reconnects, naming the run and the last seq it holds (`?run=…&since=…`), so nothing
 * arrives twice. An unknown or expired code (close 4404) or a wrong secret (4403) is final: it stops
 * and says why through `onState("refused", message)`.
 */

const RETRY_MS = [250, 500, 1000, 2000, 4000];

/**
 * `resume()` → {run, since}: what the page holds, asked at each (re)connection.
 * `onMessage(message)`: each message; `onState(state, detail)`: "connecting", "open", "reconnecting",
 * "refused" (with the server's words).
 */
export function connectRoom(code, { secret = null, resume = () => ({}), onMessage, onState = () => {} }) {
  let socket = null;
  let stopped = false;
  let attempts = 0;
  let timer = null;
  let refusal = null;

  function url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const query = new URLSearchParams();
    if (secret) query.set("secret", secret);
    const { run, since } = resume();
    if (run) {
      query.set("run", run);
      query.set("since", String(since || 0));
    }
    const q = query.toString();
    return `${scheme}//${location.host}/ws/rooms/${encodeURIComponent(code)}${q ? `?${q}` : ""}`;
  }

  function open() {
    if (stopped) return;
    onState(attempts ? "reconnecting" : "connecting");
    const ws = new WebSocket(url());
    socket = ws;
    refusal = null;
    ws.onmessage = (message) => {
      if (ws !== socket) return;
      let data;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      if (data.type === "state" && attempts) attempts = 0;
      if (data.type === "state") onState("open");
      if (data.error !== undefined && !data.type) refusal = data.error;
      onMessage(data);
    };
    ws.onclose = (close) => {
      if (ws !== socket || stopped) return;
      socket = null;
      if (close.code === 4404 || close.code === 4403) {
        stopped = true;
        onState("refused", { code: close.code, message: refusal || close.reason });
        return;
      }
      const wait = RETRY_MS[Math.min(attempts, RETRY_MS.length - 1)];
      attempts += 1;
      onState("reconnecting");
      timer = setTimeout(open, wait);
    };
  }

  open();
  return {
    /** Send a control message; false when the socket is not open. */
    send(message) {
      if (!socket || socket.readyState !== WebSocket.OPEN) return false;
      socket.send(JSON.stringify(message));
      return true;
    },
    get open() {
      return Boolean(socket && socket.readyState === WebSocket.OPEN);
    },
    close() {
      stopped = true;
      clearTimeout(timer);
      socket?.close();
      socket = null;
    },
    /** Drop the socket as a network failure would (it reconnects); for trying resumption out. */
    drop() {
      socket?.close();
    },
  };
}
