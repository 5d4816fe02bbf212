"""The rank ↔ server byte stream: JSON lines over a TCP socket, after a hello line. Events go up;
control messages for the step-mode gate (`workers/gate.py`) come down.

A socket rather than a pipe so that ranks on other hosts (started by torchrun) can later report to
the same server with the run's token.

Events are written at once, in the order sent: when a rank dies the next instant (`os._exit`, a
segfault, gloo aborting it inside a collective), what it said before is on its way. A traced call's
`end` — its previews, blobs and event — is made by the channel's own thread (`later`: a job the
tracer queues with copies of the call's outputs) while the rank goes on; an event sent while jobs
are queued waits until they are written, so events keep their order (a rank dying abruptly can lose
its last call's `end` only). Tensor blobs — a header line and up to 256 KiB of raw values each (a
frame: workers/protocol.py) — are written by that thread too; nothing orders them against events
(the server stores them apart, the page asks for one by id), and `close()` writes everything still
queued before it closes the socket. A blob not written when a rank dies is lost: a hover over that
tensor's block-averaged grid then shows the block's mean.
"""

from __future__ import annotations

import queue
import select
import socket
import sys
import threading
import traceback
from typing import Callable

from workers.protocol import BlobValues, Encoded, decode, encode, frame

MAX_QUEUED_BYTES = 64 << 20   # copies held by jobs not yet written, at most


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
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()   # blobs, jobs, flushes
        self._queue_lock = threading.Lock()
        self._unwritten = 0                     # jobs queued, not yet written: an event sent waits for them
        self._lost_jobs = 0                     # jobs that raised: their calls' events are missing from the log
        self._queued_bytes = 0                  # the copies those jobs hold
        self._failure: OSError | None = None    # why the channel's thread stopped writing: every later send raises it
        self._closed = False
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
        """Write one event now (once the jobs queued before it are written), or queue one tensor
        blob for the channel's thread. Raises what the connection met, here or in that thread
        (every send from then on)."""
        if self._failure is not None:
            raise self._failure
        if "blob" in message:
            self._outbox.put(message)
            return
        line = message.line if type(message) is Encoded else encode(message)   # the tracer's line, if written
        if self._unwritten:   # in order: the calls' ends still being made go first
            self.flush(timeout_s=None)
        with self._lock:
            self._write_event(message, line)

    def later(self, job: Callable[[], list[dict]], nbytes: int = 0) -> bool:
        """Queue a job for the channel's thread: it makes messages (a traced call's blobs and end
        event, from copies of `nbytes` taken at the call), written before any event sent after it.
        False, and nothing queued, when the jobs queued already hold MAX_QUEUED_BYTES (a rank
        outrunning its channel's thread) or the channel is closing: the caller then makes its
        messages itself."""
        if self._failure is not None:
            raise self._failure
        with self._queue_lock:
            if self._closed or (self._unwritten and self._queued_bytes + nbytes > MAX_QUEUED_BYTES):
                return False
            self._unwritten += 1
            self._queued_bytes += nbytes
        self._outbox.put((job, nbytes))
        return True

    def _write_event(self, message: dict, line: bytes | None = None) -> None:
        """Write one event (the caller holds `_lock`): `line` as it was written, unless its time moves."""
        ordered = self._in_order(message)
        if line is None or ordered is not message:
            line = ordered.line if type(ordered) is Encoded else encode(ordered)
        with self._writing:
            self._sock.sendall(line)

    def flush(self, timeout_s: float | None = 10.0) -> bool:
        """Wait until every message sent or queued so far is written (False: not within `timeout_s`)."""
        written = threading.Event()
        self._outbox.put(written)
        return written.wait(timeout_s)

    def _write_all(self) -> None:
        while (item := self._outbox.get()) is not None:
            try:
                self._write_item(item)
            except Exception:   # noqa: BLE001  one bad message must not stop the thread a traced call waits on
                pass

    def _write_item(self, item) -> None:
        if isinstance(item, threading.Event):   # a flush: everything before it is written
            item.set()
        elif isinstance(item, tuple):
            self._run_job(*item)
        else:
            self._write_blob(item)

    def _run_job(self, job: Callable[[], list[dict]], nbytes: int) -> None:
        try:
            messages = job() if self._failure is None else []
        except Exception:   # noqa: BLE001  a preview that could not be made: that call's event is lost, not the rank
            messages = []
            self._say_lost()
        try:
            for message in messages:
                if "blob" in message:
                    self._write_blob(message)
                else:
                    self._write_queued_event(message)
        finally:
            self._written(nbytes)

    def _say_lost(self) -> None:
        """The first lost event says why on the rank's stderr (its output panel); the rest only count."""
        self._lost_jobs += 1
        if self._lost_jobs == 1:
            print("paralab tracer: a traced call's event could not be made and is missing from the log "
                  "(later ones that fail are not reported again):", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)

    def _written(self, nbytes: int) -> None:
        """A queued job is written: events go at once again when none is left."""
        with self._queue_lock:
            self._unwritten -= 1
            self._queued_bytes -= nbytes

    def _write_queued_event(self, message: dict) -> None:
        if self._failure is not None:
            return
        try:
            with self._lock:
                self._write_event(message)
        except OSError as exc:
            self._failure = exc

    def _write_blob(self, message: dict) -> None:
        if self._failure is not None:
            return   # the connection is gone: drain, so close() does not wait
        try:
            parts = frame(message) if type(message.get("data")) is BlobValues else (encode(message),)
        except (TypeError, ValueError):   # not a blob this channel made: dropped, as JSON cannot hold it
            return
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
        """Write what is still queued (for at most `timeout_s`), then close."""
        with self._queue_lock:
            self._closed = True
        self._outbox.put(None)
        self._writer.join(timeout_s)
        with self._lock:
            try:
                self._sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self._sock.close()

