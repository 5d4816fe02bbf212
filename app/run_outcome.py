"""How a run ends, and the word it ends with: done when every rank exited cleanly; failed with the
crash, the hang, the time limit, the supervisor's death or a person's absence named; cancelled."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import time
from typing import Callable

from app import flight_recorder
from app.flight_recorder import ranks_phrase
from app.messages import run_error, say
from app.run import Run
from app.run_store import RunStore
from app.settings import Settings
from workers.protocol import Log as LogEvent, Run as RunEvent

CHANNEL_DRAIN_S = 2.0      # after the supervisor's report: how long ranks' channels may stay quiet before we stop waiting
CHANNEL_DRAIN_MAX_S = 20.0  # … and how long in all, however busy the server (a loaded machine reads slowly)
SUPERVISOR_REPORT_GRACE_S = 6.0   # a supervisor gone without its report: how long the report may still take to arrive

log = logging.getLogger("paralab.runs")


class Outcome:
    def __init__(self, settings: Settings, store: RunStore, on_end: Callable[[Run, bool], None]):
        self.settings = settings
        self.store = store
        self.on_end = on_end            # (run, it was still queued): told once each run has ended

    def time_limit(self, run: Run) -> float:
        """Step mode waits on a person, so it gets the longer limit."""
        return self.settings.STEP_TIME_LIMIT_S if run.step else self.settings.RUN_TIME_LIMIT_S

    def finish(self, run: Run, status: str, error: dict | None) -> None:
        if run.final:
            return
        was_queued = run.status == "queued"
        self.record_all(run, run.order.flush())
        run.status, run.error = status, error
        self.store.record(run, RunEvent(t=run.now(), status=status, error=error or None).to_dict())
        self.store.save(run)
        run.finished.set()
        self.on_end(run, was_queued)
        self.store.forget_old()

    def record_all(self, run: Run, events: list[dict]) -> None:
        for event in events:
            self.store.record(run, event)

    @staticmethod
    def kill(run: Run) -> None:
        if run.remote is not None:          # on a Ray cluster: each node stops its part
            run.remote.kill()
            return
        if run.pid is None:
            return
        try:
            os.killpg(run.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    # ---- the supervisor's report ------------------------------------------------------------------
    async def conclude(self, run: Run) -> None:
        """The supervisor has reported: let the ranks' last events arrive, then end the run."""
        await self._drain(run)
        if run.final:
            return
        self.record_all(run, run.order.flush())
        report = run.report or {}
        self._record_output(run, report.get("output"))
        if report.get("timed_out"):
            self.finish(run, "failed", self.timeout_error(run))
            return
        failed = [e for e in report.get("exits", []) if e["code"] != 0 and not e.get("stopped")]
        if not failed:
            self.finish(run, "done", None)
        else:
            error = flight_recorder.explain_crash(self._crash_error(run, failed), run.events, run.world_size)
            self.finish(run, "failed", error)

    @staticmethod
    async def _drain(run: Run) -> None:
        """Every rank has exited, so each channel ends once the server has read what is in it. Wait while
        events still come (a busy server reads slowly: a rank's error must not be cut off), and no longer
        than CHANNEL_DRAIN_S of quiet — a channel on another host may never close."""
        start = time.monotonic()
        while run.channels_open > 0:
            now = time.monotonic()
            if now - max(start, run.last_event_at) > CHANNEL_DRAIN_S or now - start > CHANNEL_DRAIN_MAX_S:
                log.warning("run %s: %d rank channel(s) still open %.1f s after its supervisor's report",
                            run.id, run.channels_open, now - start)
                return
            await asyncio.sleep(0.005)

    def _record_output(self, run: Run, output) -> None:
        """What each rank printed (stdout and stderr), as one `log` event per rank that printed: the
        tail the supervisor kept, and how much more there was."""
        if not isinstance(output, list):
            return
        keep = self.settings.MAX_RANK_OUTPUT_BYTES
        for entry in output[: run.world_size]:
            if not isinstance(entry, dict) or not isinstance(entry.get("rank"), int):
                continue
            tail, printed = str(entry.get("tail", "")), int(entry.get("bytes", 0))
            while len(json.dumps(tail)) > keep and tail:      # escapes must not push it past an event's size
                tail = tail[len(tail) // 4:]
            dropped = max(printed - len(tail.encode()), 0)
            message = f"rank {entry['rank']} printed {printed} bytes"
            if dropped:
                message += f"; only the last {printed - dropped} are kept (a rank's output is capped at {keep} bytes)"
            self.store.record(run, LogEvent(rank=entry["rank"], t=run.now(), level="output", message=message,
                                            output=tail, output_bytes=printed, dropped_bytes=dropped).to_dict())

    def _crash_error(self, run: Run, failed: list[dict]) -> dict:
        # A rank whose own collective or send/recv failed was most likely cut off by another rank's
        # death (the supervisor may reap that one second): name the others first.
        first = min(failed, key=lambda e: (_failed_in_communication(run, e["rank"]), e["rank"]))
        rank = first["rank"]
        raised = run.rank_errors.get(rank)
        if raised is not None:
            return run_error("crash", say("crash.raised", "rank {rank} raised {exception}", rank=rank,
                                          exception=raised["message"]),
                             rank=rank, site=raised.get("site"), traceback=raised.get("traceback"))
        code = first["code"]
        how = (say("crash.killed", "rank {rank} was killed by {signal}", rank=rank, signal=signal.Signals(-code).name)
               if code < 0 else say("crash.exited", "rank {rank} exited with status {status}", rank=rank, status=code))
        return run_error("crash", how, rank=rank, site=run.last_site(rank))

    def timeout_error(self, run: Run) -> dict:
        limit = self.time_limit(run)   # a step-mode run has the longer limit
        return run_error("timeout", say("run.wall_clock_limit", "the run passed its wall-clock limit of {seconds} s",
                                        seconds=_seconds(limit)),
                         ranks={str(r): run.last_site(r) for r in range(run.world_size)})

    # ---- watching a running run ----------------------------------------------------------------------
    async def watch(self, run: Run) -> None:
        """A run is hung when some rank sits inside a collective or send/recv, no event has come for
        `hang_timeout_s`, and no rank is waiting at a step-mode gate (that is a person's pause).
        It also ends a run whose supervisor died, and a step-mode run left waiting too long."""
        while not run.final:
            await asyncio.sleep(min(0.25, run.hang_timeout_s / 4))
            self.record_all(run, run.order.overdue())
            if self._supervisor_died(run) or self._node_died(run) or self._idle_too_long(run):
                return
            quiet = time.monotonic() - run.last_event_at
            if quiet < run.hang_timeout_s or run.waiting or run.report is not None:
                continue
            self.record_all(run, run.order.flush())
            if flight_recorder.open_calls(run.events, run.world_size):
                self.kill(run)
                report = flight_recorder.diagnose(run.events, run.world_size)
                diagnosis = {key: report.pop(key) for key in ("code", "params", "message")}
                message = say("hang.hung", "hung for {seconds} s: {diagnosis}", seconds=_seconds(run.hang_timeout_s),
                              diagnosis=diagnosis)
                self.finish(run, "failed", run_error("hang", message, **report))

    def _supervisor_died(self, run: Run) -> bool:
        """The supervisor is gone without its report (killed; or the launcher died, taking it along):
        the ranks went with it. Given the report's own time to arrive, the run fails saying so."""
        if run.pid is None or run.report is not None or _process_exists(run.pid):
            return False
        now = time.monotonic()
        run.supervisor_gone_at = run.supervisor_gone_at or now
        if now - run.supervisor_gone_at < SUPERVISOR_REPORT_GRACE_S:   # a loaded server reads it late
            return False
        self.kill(run)
        self.finish(run, "failed", run_error("supervisor", say(
            "run.supervisor_died", "the run's supervisor (pid {pid}) died without reporting; its ranks were stopped with it",
            pid=run.pid)))
        return True

    def _node_died(self, run: Run) -> bool:
        """On a Ray cluster: a node that ran some of this run's ranks died. The run fails naming it (the
        ranks elsewhere are stopped); other runs go on."""
        lost = run.remote.lost_node() if run.remote is not None else None
        if lost is None:
            return False
        node, ranks = lost
        self.kill(run)
        self.finish(run, "failed", run_error("node", say(
            "run.node_died", "the cluster node {node} died, and with it {ranks} of this run",
            node=node, ranks=ranks_phrase(ranks)), node=node, ranks=ranks))
        return True

    def _idle_too_long(self, run: Run) -> bool:
        """A step-mode run whose ranks wait at their gates with nobody stepping holds a run slot:
        after STEP_IDLE_LIMIT_S it ends, and gives the slot back."""
        limit = self.settings.STEP_IDLE_LIMIT_S
        if not run.waiting or time.monotonic() - max(run.last_control_at, run.last_event_at) < limit:
            return False
        self.kill(run)
        self.finish(run, "failed", run_error("idle", say(
            "run.idle", "nobody stepped, continued or paused this run for {seconds} s; it was ended to free its slot",
            seconds=_seconds(limit))))
        return True


def _seconds(value: float) -> float | int:
    """A number of seconds as `:g` writes it: 6, not 6.0."""
    return int(value) if float(value).is_integer() else value


def _failed_in_communication(run: Run, rank: int) -> bool:
    return any(e.get("rank") == rank and e.get("phase") == "end" and "error" in e for e in run.events)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
