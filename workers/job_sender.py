"""One rank of a job started outside the server (torchrun) sends its events to a paralab server from a
thread of its own, in batches over HTTP, and never stops the job for it: a server that is down at the
start or goes away makes it drop events and count them, nothing else.

The thread joins the job's run (`POST /api/external/join`), measures how far this host's clock is
from the server's (`GET /api/external/clock`, the best of a few round trips), then posts what the
tracer queued every `interval` seconds; `close()` posts the rest and says goodbye, within a deadline.
Standard library only: it runs inside the user's program.
"""

from __future__ import annotations

import http.client
import json
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit

from workers.protocol import encode

MAX_BATCH_BYTES = 256 * 1024        # under the server's body limit (512 KiB)
MAX_QUEUED_BYTES = 64 * 1024 * 1024  # past this the newest events are dropped (a server long out of reach)
REQUEST_TIMEOUT_S = 5.0           # a loaded server may be slow to answer; the rank never waits for it
RETRY_AFTER_S = 1.0                 # after a failed request, the next try waits this long
CLOCK_SAMPLES = 5
MAX_SCRIPT_CHARS = 128 * 1024       # a job's script, as its join carries it (JSON): longer, it is not sent


@dataclass(frozen=True)
class RankIdentity:
    job: str            # torchrun's run id and restart count: every rank of the job says the same
    rank: int
    world_size: int
    node: int           # torchrun's node rank
    host: str


class ServerGone(Exception):
    pass


class JobSender:
    def __init__(self, server: str, identity: RankIdentity, token: str | None = None, interval: float = 0.05,
                 on_join: Callable[["JobSender"], None] | None = None, script: dict | None = None):
        parts = urlsplit(server if "//" in server else f"http://{server}")
        self.server = f"{parts.scheme}://{parts.netloc}"
        self._https, self._netloc = parts.scheme == "https", parts.netloc
        self.identity = identity
        self.token = token
        self.interval = interval
        self.on_join = on_join
        self.script = script                # {"path", "text"}: the file the job runs, for its page's Source panel
        self.sent = 0
        self.dropped = 0
        self.page: str | None = None        # the run's page, once joined
        self.backend: str | None = None     # set by the rank once its process group exists
        self._queue: deque[bytes] = deque()
        self._queued_bytes = 0
        self._finished = False              # the thread has ended: nothing more will be sent
        self.last_error: str | None = None  # why the server last could not be reached
        self.stopped: str | None = None     # the signal that stopped the rank ("SIGTERM"), said in the goodbye
        self.closed = False
        self._lock = threading.RLock()       # re-entrant: a SIGTERM handler may close while the rank is in put()
        self._closing = threading.Event()
        self._connection: http.client.HTTPConnection | None = None
        self._run: dict | None = None
        self._member = secrets.token_hex(8)   # this process: a join retried after a lost answer is not a new job
        self._clock: dict | None = None
        self._thread = threading.Thread(target=self._serve, name="paralab-sender", daemon=True)
        self._thread.start()

    # ---- the rank's side: never blocks, never raises ------------------------------------------------
    def put(self, message: dict) -> None:
        data = encode(message)
        with self._lock:
            if self._finished or self._queued_bytes + len(data) > MAX_QUEUED_BYTES or len(data) > MAX_BATCH_BYTES:
                self.dropped += 1
                return
            self._queue.append(data)
            self._queued_bytes += len(data)

    def close(self, deadline_s: float = 5.0) -> None:
        """Send what is queued and say goodbye, for at most `deadline_s`; what is left is dropped."""
        self.closed = True
        self._closing.set()
        self._thread.join(deadline_s)
        with self._lock:
            self._finished = True
            self.dropped += len(self._queue)
            self._queue.clear()

    # ---- the thread ---------------------------------------------------------------------------------
    def _serve(self) -> None:
        while self._run is None:
            try:
                self._join()
            except ServerGone:
                if self._closing.wait(RETRY_AFTER_S):
                    return
        while True:
            closing = self._closing.wait(self.interval)
            self._send_queued(until_empty=closing)
            if closing:
                self._goodbye()
                return

    def _join(self) -> None:
        who = self.identity
        self._run = None
        run = self._request("POST", "/api/external/join", {"job": who.job, "world_size": who.world_size,
                                                          "rank": who.rank, "node": who.node, "host": who.host,
                                                          "member": self._member,
                                                          **({"script": self.script} if self.script else {})})
        self._clock = self._measure_clock()
        self._run, self.page = run, self.server + run["page"]
        self._send_batch([])                 # the server learns this rank's host and clock at once
        if self.on_join is not None:
            self.on_join(self)

    def _measure_clock(self) -> dict:
        """Server clock − this host's, from the round trip with the least time in flight."""
        best = None
        for _ in range(CLOCK_SAMPLES):
            before = time.monotonic()
            now = self._request("GET", "/api/external/clock")["now"]
            after = time.monotonic()
            if best is None or after - before < best["rtt"]:
                best = {"offset": now - (before + after) / 2, "rtt": after - before}
        return best

    def _send_queued(self, until_empty: bool) -> None:
        while True:
            batch = self._take_batch()
            if not batch:
                return
            try:
                self._send_batch(batch)
            except ServerGone:
                with self._lock:
                    self.dropped += len(batch)
                if until_empty or self._closing.wait(RETRY_AFTER_S):
                    self._drop_queue()
                    return
            if not until_empty:
                return

    def _take_batch(self) -> list[bytes]:
        batch, size = [], 0
        with self._lock:
            while self._queue and size + len(self._queue[0]) <= MAX_BATCH_BYTES:
                data = self._queue.popleft()
                batch.append(data)
                size += len(data)
            self._queued_bytes -= size
        return batch

    def _drop_queue(self) -> None:
        with self._lock:
            self.dropped += len(self._queue)
            self._queue.clear()
            self._queued_bytes = 0

    def _send_batch(self, batch: list[bytes]) -> None:
        header = {"token": self._run["token"], "rank": self.identity.rank, "node": self.identity.node,
                  "host": self.identity.host, "clock": self._clock, "backend": self.backend}
        self._request("POST", f"/api/external/runs/{self._run['run']}/events", body=encode(header) + b"".join(batch),
                      content_type="application/x-ndjson")
        self.sent += len(batch)

    def _goodbye(self) -> None:
        try:
            self._request("POST", f"/api/external/runs/{self._run['run']}/goodbye",
                          {"token": self._run["token"], "rank": self.identity.rank, "sent": self.sent,
                           "dropped": self.dropped + len(self._queue), "stopped": self.stopped})
        except ServerGone:
            pass

    def _request(self, method: str, path: str, payload: dict | None = None, body: bytes | None = None,
                 content_type: str = "application/json") -> dict:
        """One request; ServerGone when the server cannot be reached or refuses it."""
        if payload is not None:
            body = json.dumps(payload).encode()
        headers = {"content-type": content_type}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        for fresh in ((False, True) if self._connection is not None else (True,)):
            try:
                if fresh:
                    kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
                    self._connection = kind(self._netloc, timeout=REQUEST_TIMEOUT_S)
                self._connection.request(method, path, body=body, headers=headers)
                response = self._connection.getresponse()
                answer = response.read()
                break
            except (OSError, http.client.HTTPException) as exc:
                # a kept-alive connection the server closed meanwhile (uvicorn does after 5 s idle):
                # once more on a new one, then the server is out of reach
                self._connection.close()
                self._connection = None
                if fresh:
                    self.last_error = f"{self.server} could not be reached ({exc})"
                    raise ServerGone(self.last_error) from exc
        if response.status >= 400:
            self.last_error = f"{self.server} answered {response.status}: {answer[:300].decode(errors='replace')}"
            raise ServerGone(self.last_error)
        return json.loads(answer)
