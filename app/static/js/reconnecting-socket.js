/**
 * A websocket that reopens itself after a drop, waiting a little longer each time (250 ms, then
 * doubling up to 4 s): what the run socket (connection.js) and the room socket (room-connection.js)
 * share. `url()` is asked again at each opening, so a reconnection can say what the page already holds.
 */

const RETRY_MS = [250, 500, 1000, 2000, 4000];

/**
 * `onMessage(data)` gets each message, parsed from JSON (others are ignored); `onState(state)` hears
 * "connecting", "open" and "reconnecting"; `isFinal(close)` says whether a close ends it for good
 * (then `onFinal(close)` is called instead of a retry).
 */
export function reconnectingSocket({ url, onMessage, onState = () => {}, isFinal = () => false, onFinal = () => {} }) {
  let socket = null;
  let stopped = false;
  let attempts = 0;
  let timer = null;

  function open() {
    if (stopped) return;
    onState(attempts ? "reconnecting" : "connecting");
    const ws = new WebSocket(url());
    socket = ws;
    ws.onopen = () => {
      if (ws !== socket) return;
      attempts = 0;
      onState("open");
    };
    ws.onmessage = (message) => {
      if (ws !== socket) return;
      let data;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      onMessage(data);
    };
    ws.onclose = (close) => {
      if (ws !== socket || stopped) return;
      socket = null;
      if (isFinal(close)) {
        stopped = true;
        onFinal(close);
        return;
      }
      const wait = RETRY_MS[Math.min(attempts, RETRY_MS.length - 1)];
      attempts += 1;
      onState("reconnecting");
      timer = setTimeout(open, wait);
    };
  }

  const handle = {
    /** Send a control message; false when the socket is not open. */
    send(message) {
      if (!socket || socket.readyState !== WebSocket.OPEN) return false;
      socket.send(JSON.stringify(message));
      return true;
    },
    /** Whether control messages can go out now. */
    get open() {
      return Boolean(socket && socket.readyState === WebSocket.OPEN);
    },
    /** Close for good. */
    close() {
      stopped = true;
      clearTimeout(timer);
      const ws = socket;
      socket = null;
      ws?.close();
    },
    /** Drop the socket as a network failure would (it reconnects): for a gap, or to try resumption. */
    drop() {
      socket?.close();
    },
  };
  open();
  return handle;
}
