"""The rank ↔ server byte stream: JSON lines over a TCP socket, after a hello line. Events go up;
control messages for the step-mode gate (`workers/gate.py`) come down.

A socket rather than a pipe so that ranks on other hosts (started by torchrun) can later report to
the same server with the run's token.

Every event is written at once, by the thread that sends it, in the order sent: when a rank dies
the next instant (`os._exit`, a segfault, gloo aborting it inside a collective), what it said before
is on its way. A tensor blob — a frame: a header line, then up to 256 KiB of raw values
(workers/protocol.py) — goes with the next event (the traced call's event that names it), in the
same system call; `close()` writes one still held. No thread of its own: handing a traced call's
blobs and its end to one cost a rank more CPU than making and writing them (docs/benchmarks.md,
"Eighth pass").
"""

from __future__ import annotations

import select
import socket
import threading

from workers.protocol import Encoded, decode, encode, frame, is_frame


class EventChannel:
    """A connection to the server's event port that sends one message per call, thread-safely."""

    def __init__(self, address: str, run_id: str, token: str, rank: int | None):
        if address.startswith("unix:"):          # from inside the sandbox, through its relay (workers/sandboxed_run.py)
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock.connect(address.removeprefix("unix:"))
        else:
            host, port = address.rsplit(":", 1)
            self._sock = socket.create_connection((host, int(port)))
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._lock = threading.Lock()           # one message's bytes at a time, events' times in order
        self._last_t = float("-inf")
        self._inbox = b""
        self._held: list[bytes] = []            # blob frames' parts, written with the next event
        self.send({"hello": run_id, "token": token, "rank": rank})

    def receive(self, timeout: float | None = None) -> dict | None:
        """The next control message from the server; None if none came within `timeout` seconds
        (0 polls) or the server closed the connection."""
        while b"\n" not in self._inbox:
            ready, _, _ = select.select([self._sock], [], [], timeout)
            if not ready:
                return None
            data = self._sock.recv(65536)
            if not data:
                return None
            self._inbox += data
        line, _, self._inbox = self._inbox.partition(b"\n")
        return decode(line)

    def send(self, message: dict) -> None:
        """Write one event now, as its line (the tracer's, if it wrote one), after the blobs held;
        hold a tensor blob's frame for the next event. Raises what the connection met."""
        if is_frame(message):
            with self._lock:
                self._held.extend(frame(message))
            return
        line = message.line if type(message) is Encoded else encode(message)
        with self._lock:
            ordered = self._in_order(message)
            if ordered is not message:   # its time moved: written again
                line = encode(ordered)
            self._held.append(line)
            parts, self._held = self._held, []
            self._write(parts)

    def _write(self, parts: list[bytes]) -> None:
        """`parts` one after the other, in as few system calls as the socket takes them (not joined:
        a blob's values are not copied again)."""
        views = [memoryview(p).cast("B") for p in parts]
        while views:
            sent = self._sock.sendmsg(views)
            while views and sent >= len(views[0]):
                sent -= len(views.pop(0))
            if views:
                views[0] = views[0][sent:]

    def _in_order(self, event: dict) -> dict:
        """An event is never earlier than the last one this rank reported. A call that ends in the
        backend's thread (a dispatched collective's future) takes its time, then its previews, while
        the program goes on: reported after a later event of its own, it is placed at that event's time
        (its `t_call` and `duration` keep the call's own timing)."""
        t = event.get("t")
        if "kind" not in event or not isinstance(t, (int, float)):
            return event
        if t < self._last_t:
            event = {**event, "t": self._last_t}
        self._last_t = event["t"]
        return event

    def close(self) -> None:
        """Write the blobs still held, then close."""
        with self._lock:
            try:
                self._write(self._held)
                self._held = []
                self._sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self._sock.close()
