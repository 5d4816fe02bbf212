"""The event port: each rank's (and each supervisor's) connection, after a hello naming the run and
its token. A rank's event is checked against the protocol (a malformed one fails the run, unshown),
held until what it depends on is recorded (app/causal.py), then recorded; a tensor blob (a frame: its
line, then its raw values) is stored; the supervisor's report ends the run. What a run may store is
bounded, whatever its ranks send: past MAX_RUN_EVENTS events the run fails, and full tensors past
MAX_RUN_TENSOR_BYTES are not kept (their previews are, in the events)."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from typing import Callable

from app.messages import run_error, say
from app.run import Run
from app.run_outcome import Outcome
from app.run_store import RunStore
from app.settings import Settings
from workers.protocol import decode, frame_length, problem

log = logging.getLogger("paralab.runs")


class Ingest:
    def __init__(self, settings: Settings, store: RunStore, outcome: Outcome, spawn: Callable):
        self.settings = settings
        self.store = store
        self.outcome = outcome
        self.spawn = spawn              # starts a task the manager keeps (and cancels when it stops)
        self.address = ""
        self._server: asyncio.base_events.Server | None = None

    async def start(self, host: str = "127.0.0.1") -> None:
        """Listen on `host` (loopback; on a Ray cluster, this node's address, where the other nodes' ranks reach it)."""
        self._server = await asyncio.start_server(self._on_channel, host, 0, limit=1 << 22)
        host, port = self._server.sockets[0].getsockname()[:2]
        self.address = f"{host}:{port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    async def _on_channel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        run, rank = None, None
        try:
            hello = decode(await reader.readline())
            run = self.store.runs.get(str(hello.get("hello")))
            if run is None or run.final or not hmac.compare_digest(str(hello.get("token")), run.token):
                return
            rank = hello.get("rank")
            if rank is not None:
                run.channels_open += 1
                run.writers[rank] = writer
                if run.stepping is not None and run.stepping != run.step:   # continue/pause said before it connected
                    writer.write((json.dumps({"stepping": run.stepping}) + "\n").encode())
            while line := await reader.readline():
                message = decode(line)
                if (length := frame_length(message)) is not None:   # a blob's raw values follow its line
                    message["data"] = await reader.readexactly(length)
                self.take(run, rank, message, line)
        except (ValueError, ConnectionError, asyncio.IncompleteReadError) as exc:
            log.warning("event channel of run %s rank %s: %s", run and run.id, rank, exc)
        finally:
            if run is not None and rank is not None:
                run.channels_open -= 1
                run.writers.pop(rank, None)
                run.waiting.pop(rank, None)
            writer.close()

    def take(self, run: Run, rank: int | None, message: dict, line: bytes | None = None) -> None:
        """One message from the channel of `rank` (None: the supervisor's); `line`, the JSON line it
        was read from (an event whose `rank` is its channel's is checked as that line)."""
        if run.final:
            return
        if "blob" in message:
            self._keep_tensor(run, message)
        elif "supervisor" in message:
            self._supervisor_report(run, message)
        elif run.events_received >= self.settings.MAX_RUN_EVENTS:
            self.outcome.kill(run)
            self.outcome.finish(run, "failed", run_error("limit", say(
                "run.too_many_events", "the ranks sent more than {limit} events, the most a run may record: stopped",
                limit=self.settings.MAX_RUN_EVENTS), rank=rank))
        else:
            run.events_received += 1
            sent = message.get("rank")
            message["rank"] = rank   # a rank speaks only for itself
            as_sent = line if type(sent) is int and sent == rank else None   # else the line is not what is checked
            if (wrong := problem(message, as_sent)) is not None:   # never shown: the run fails, naming the field
                self.outcome.kill(run)
                self.outcome.finish(run, "failed", run_error("protocol", say(
                    "run.protocol_error", "rank {rank} sent {problem}", rank=rank, problem=wrong), rank=rank))
                return
            run.last_event_at = time.monotonic()
            self.outcome.record_all(run, run.order.admit(message))

    def _keep_tensor(self, run: Run, blob: dict) -> None:
        """Stored while the run's full tensors stay within MAX_RUN_TENSOR_BYTES; past it, not kept (the
        page shows the tensor's preview, and its block means where the preview averages)."""
        data = blob.get("data")
        size = len(data) if isinstance(data, (bytes, bytearray, str)) else 0
        if run.tensor_bytes + size > self.settings.MAX_RUN_TENSOR_BYTES:
            if not run.tensors_not_kept:
                log.info("run %s: full tensors past %d bytes are not kept", run.id, self.settings.MAX_RUN_TENSOR_BYTES)
            run.tensors_not_kept += 1
            return
        run.tensor_bytes += size
        self.store.save_tensor(run, blob)

    def _supervisor_report(self, run: Run, report: dict) -> None:
        """A supervisor's report. On a cluster each node's supervisor reports its own ranks: the run is
        concluded when every node has, or at once when one reports a failure (the other nodes' ranks
        would only wait on the failed ones: they are stopped)."""
        if run.report is not None:
            return
        run.reports.append(report)
        failed = report.get("timed_out") or any(
            e.get("code") != 0 and not e.get("stopped") for e in report.get("exits", []) if isinstance(e, dict))
        if len(run.reports) < run.reports_expected:
            if not failed:
                return
            self.outcome.kill(run)
        run.report = _merged(run.reports)
        self.spawn(self.outcome.conclude(run))


def _merged(reports: list[dict]) -> dict:
    """One report from each node's: every exit, every rank's output, timed out if any node's was."""
    if len(reports) == 1:
        return reports[0]
    return {"supervisor": "exited", "timed_out": any(r.get("timed_out") for r in reports),
            "exits": sorted((e for r in reports for e in r.get("exits", [])), key=lambda e: e.get("rank", 0)),
            "output": sorted((o for r in reports for o in r.get("output", [])), key=lambda o: o.get("rank", 0))}
