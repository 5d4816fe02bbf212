"""The rank ↔ server byte stream: JSON lines over a TCP socket, after a hello line. Events go up;
control messages for the step-mode gate (`workers/gate.py`) come down.

A socket rather than a pipe so that ranks on other hosts (started by torchrun) can later report to
the same server with the run's token.

Events are written at once, in the order sent: when a rank dies the next instant (`os._exit`, a
segfault), what it said before is on its way. Tensor blobs — a header line and up to 256 KiB of raw
values each (a frame: workers/protocol.py) — are written by the channel's own thread while the rank
goes on (the blob's values were copied at the call); nothing orders them against events
(the server stores them apart, the page asks for one by id), and `close()` writes those still
queued before it closes the socket. A blob not written when a rank dies is lost: a hover over that
tensor's block-averaged grid then shows the block's mean.
"""

from __future__ import annotations

import queue
import select
import socket
import threading

from workers.protocol import BlobValues, Encoded, decode, encode, frame


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
        self._lock = threading.Lock()
        self._last_t = float("-inf")
        self._inbox = b""
        self._writing = threading.Lock()        # one message's bytes at a time on the socket
        self._outbox: queue.SimpleQueue[dict | threading.Event | None] = queue.SimpleQueue()   # blobs
        self._failure: OSError | None = None    # why the blob writer stopped: every later send raises it
        self._writer = threading.Thread(target=self._write_all, name="paralab-channel", daemon=True)
        self._writer.start()
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
        """Write one event now, or queue one tensor blob for the channel's thread. Raises what the
        connection met, here or in that thread (every send from then on)."""
        if self._failure is not None:
            raise self._failure
        if "blob" in message:
            self._outbox.put(message)
            return
        with self._lock:
            ordered = self._in_order(message)
            data = ordered.line if type(ordered) is Encoded else encode(ordered)   # the tracer's line, if unchanged
            with self._writing:
                self._sock.sendall(data)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every blob sent so far is written (False: not within `timeout_s`)."""
        written = threading.Event()
        self._outbox.put(written)
        return written.wait(timeout_s)

    def _write_all(self) -> None:
        while (message := self._outbox.get()) is not None:
            if isinstance(message, threading.Event):   # a flush: everything before it is written
                message.set()
                continue
            if self._failure is not None:
                continue   # the connection is gone: drain, so close() does not wait
            try:
                parts = frame(message) if type(message.get("data")) is BlobValues else (encode(message),)
            except (TypeError, ValueError):   # not a blob this channel made: dropped, as JSON cannot hold it
                continue
            try:
                with self._writing:   # a frame's header, then its values (not copied to join them)
                    for part in parts:
                        self._sock.sendall(part)
            except OSError as exc:
                self._failure = exc

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

    def close(self, timeout_s: float = 10.0) -> None:
        """Write the blobs still queued (for at most `timeout_s`), then close."""
        self._outbox.put(None)
        self._writer.join(timeout_s)
        with self._lock:
            try:
                self._sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self._sock.close()
