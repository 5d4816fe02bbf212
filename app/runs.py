"""The run manager: queues runs, launches their ranks through the warm launcher, takes their events
on the event port, numbers and records them, fans them out, and decides how each run ended."""

from __future__ import annotations

import asyncio
import heapq
import hmac
import json
import logging
import os
import secrets
import signal
import time
from dataclasses import dataclass, field

from app import flight_recorder
from app.causal import CausalOrder
from app.hub import Hub
from app.launcher import Launcher
from app.recording import Recording, recorded_ids
from app.settings import Settings
from workers.launch_request import LaunchRequest
from workers.protocol import FINAL_STATUSES, decode, problem

log = logging.getLogger("paralab.runs")

_CHANNEL_DRAIN_S = 2.0      # after the supervisor's report, how long to wait for ranks' last bytes
_KILL_GRACE_S = 5.0         # the server's own limit is the run's limit plus this


@dataclass
class Run:
    id: str
    lesson: str
    world_size: int
    params: dict
    step: bool = False
    backend: str = "gloo"
    owner: str | None = None            # the hosted lab's user who started it (None: the lecture mode)
    room: str | None = None             # the lecture room whose presenter started it: only they control it
    created_at: float = field(default_factory=time.time)
    t0: float = field(default_factory=time.monotonic)
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    status: str = "queued"
    position: int | None = None         # while queued: 1 is the next to start
    error: dict | None = None
    events: list[dict] = field(default_factory=list)
    pid: int | None = None
    channels_open: int = 0
    hang_timeout_s: float = 10.0
    last_event_at: float = field(default_factory=time.monotonic)
    writers: dict[int, asyncio.StreamWriter] = field(default_factory=dict)   # rank → its channel
    waiting: dict[int, dict] = field(default_factory=dict)                   # rank → its gate event
    report: dict | None = None
    rank_errors: dict[int, dict] = field(default_factory=dict)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    order: CausalOrder = field(default_factory=CausalOrder)   # holds an event until its causes are recorded
    last_control_at: float = field(default_factory=time.monotonic)   # a person's last step/continue/pause
    control_allowance: float | None = None                           # the control rate's token bucket
    supervisor_gone_at: float | None = None                          # when its supervisor was first missed
    stepping: bool | None = None                                     # the last pause (True) or continue (False)

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def checks(self) -> list[dict]:
        return [e for e in self.events if e.get("kind") == "check"]

    @property
    def metrics(self) -> list[dict]:
        return [e for e in self.events if e.get("kind") == "metric"]

    def meta(self) -> dict:
        return {"id": self.id, "lesson": self.lesson, "world_size": self.world_size, "params": self.params,
                "step": self.step, "backend": self.backend, "created_at": self.created_at, "owner": self.owner,
                "room": self.room,
                "hang_timeout_s": self.hang_timeout_s,
                "status": self.status, "error": self.error, "event_count": len(self.events)}


class QueueFull(Exception):
    pass


class RunManager:
    def __init__(self, settings: Settings, hub: Hub, launcher: Launcher | None = None):
        self.settings = settings
        self.hub = hub
        self.launcher = launcher or Launcher()
        self.runs: dict[str, Run] = {}
        self._recordings: dict[str, Recording] = {}
        self._recorded: dict[str, dict] = {}              # every recorded run's saved meta, by id
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._slots = asyncio.Semaphore(settings.MAX_CONCURRENT_RUNS)
        self._tasks: set[asyncio.Task] = set()
        self._server: asyncio.base_events.Server | None = None
        self.events_address = ""

    @property
    def runs_dir(self):
        return self.settings.DATA_DIR / "runs"

    # ---- life cycle --------------------------------------------------------------------------
    async def start(self) -> None:
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self._load_recorded_runs()
        self._server = await asyncio.start_server(self._on_channel, "127.0.0.1", 0, limit=1 << 22)
        host, port = self._server.sockets[0].getsockname()[:2]
        self.events_address = f"{host}:{port}"
        self._spawn(self._keep_launcher())
        self._spawn(self._schedule())

    async def stop(self) -> None:
        for run in list(self.runs.values()):
            if not run.final:
                self._kill(run)
                self._finish(run, "cancelled", {"kind": "cancelled", "message": "the server stopped"})
        for task in self._tasks:
            task.cancel()
        if self._server is not None:
            self._server.close()
        await self.launcher.stop()
        for recording in self._recordings.values():
            recording.close()

    async def _keep_launcher(self) -> None:
        """Start the launcher, and start it again whenever it dies (its runs' supervisors die with
        it, and are reported so by the watchdog)."""
        while True:
            try:
                await self.launcher.start()
                code = await self.launcher.wait()
                log.warning("the launcher exited with status %s; starting it again", code)
            except Exception:
                log.exception("the launcher failed to start; trying again")
            await asyncio.sleep(1)

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _load_recorded_runs(self) -> None:
        """Index the recorded runs (for `list`), and say in the record of each run the previous
        server left unfinished that it can never finish."""
        for run_id in recorded_ids(self.runs_dir):
            recording = Recording(self.runs_dir, run_id)
            try:
                meta = recording.load_meta()
                if not isinstance(meta, dict) or not isinstance(meta.get("created_at", 0), (int, float)):
                    raise ValueError("not a run's meta")
            except (OSError, ValueError) as exc:    # one damaged record must not stop the server
                log.warning("run %s skipped: its run.json cannot be read (%s)", run_id, exc)
                continue
            self._recorded[run_id] = meta
            if meta.get("status") not in FINAL_STATUSES:
                meta["status"] = "failed"
                meta["error"] = {"kind": "interrupted", "message": "the server stopped while this run was in flight"}
                events = recording.load_events()   # the log, too, ends with how the run ended
                events.append({"seq": len(events) + 1, "rank": None, "t": events[-1]["t"] if events else 0.0,
                               "kind": "run", "status": "failed", "error": meta["error"]})
                recording.rewrite_events(events)
                meta["event_count"] = len(events)
                recording.save_meta(meta)

    # ---- creating, finding, cancelling ----------------------------------------------------------
    def create(self, lesson: str, world_size: int, params: dict, step: bool, backend: str,
               hang_timeout_s: float | None = None, owner: str | None = None, room: str | None = None) -> Run:
        queued = sum(1 for r in self.runs.values() if r.status == "queued")
        if queued >= self.settings.MAX_QUEUED_RUNS:
            raise QueueFull(f"{queued} runs are already queued; try again shortly")
        run = Run(id=secrets.token_hex(6), lesson=lesson, world_size=world_size, params=params,
                  step=step, stepping=step, backend=backend, hang_timeout_s=hang_timeout_s or self.settings.HANG_TIMEOUT_S,
                  owner=owner, room=room)
        self.runs[run.id] = run
        recording = self._recording(run.id)
        recording.create(self._index(run))
        self._announce_positions()
        self._queue.put_nowait(run.id)
        return run

    def get(self, run_id: str) -> Run | None:
        if run_id in self.runs:
            self.runs[run_id] = self.runs.pop(run_id)          # most recently used last
            return self.runs[run_id]
        if run_id not in self._recorded:      # never cached: an id probed in vain costs nothing kept
            return None
        recording = self._recording(run_id)
        try:
            meta = recording.load_meta()
            run = Run(id=meta["id"], lesson=meta["lesson"], world_size=meta["world_size"], params=meta["params"],
                      step=meta.get("step", False), backend=meta.get("backend", "gloo"), owner=meta.get("owner"),
                      room=meta.get("room"), created_at=meta["created_at"], status=meta["status"],
                      error=meta.get("error"), events=recording.load_events())
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("run %s cannot be read back: %s", run_id, exc)
            self._recordings.pop(run_id, None)
            return None
        run.finished.set()
        self.runs[run_id] = run
        self._forget_old_runs()
        return run

    def list(self, limit: int = 50, owner: str | None = None) -> list[dict]:
        """The newest runs (of `owner`, if given), from memory and the index: no file is read."""
        metas = (run.meta() if (run := self.runs.get(run_id)) else meta for run_id, meta in self._recorded.items())
        if owner is not None:
            metas = (meta for meta in metas if meta.get("owner") == owner)
        return heapq.nlargest(limit, metas, key=lambda meta: meta.get("created_at", 0))

    def cancel(self, run: Run) -> None:
        if run.final:
            return
        self._kill(run)
        self._finish(run, "cancelled", {"kind": "cancelled", "message": "cancelled by the user"})

    def delete_owned_by(self, owner: str) -> int:
        """Cancel `owner`'s runs in flight and delete every run of theirs, recorded or in memory (their
        account is gone: a new account of the same name must not find them). Returns how many."""
        owned = [run_id for run_id, meta in self._recorded.items() if meta.get("owner") == owner]
        for run_id in owned:
            run = self.runs.get(run_id)
            if run is not None:
                self.cancel(run)
                self.runs.pop(run_id, None)
            self._recorded.pop(run_id, None)
            (self._recordings.pop(run_id, None) or Recording(self.runs_dir, run_id)).delete()
        return len(owned)

    def events_since(self, run: Run, since: int) -> list[dict]:
        return run.events[max(since, 0):]   # seq N sits at index N-1

    def tensor(self, run: Run, tensor_id: str) -> dict | None:
        return self._recording(run.id).load_tensor(tensor_id)

    def _index(self, run: Run) -> dict:
        """The run's meta, as `list` will show it once the run has left memory; to be saved."""
        meta = self._recorded[run.id] = run.meta()
        return meta

    def _recording(self, run_id: str) -> Recording:
        if run_id not in self._recordings:
            self._recordings[run_id] = Recording(self.runs_dir, run_id)
        return self._recordings[run_id]

    # ---- events --------------------------------------------------------------------------------
    def record(self, run: Run, event: dict) -> dict:
        """Number an event, keep it, write it and send it to every subscriber of the run."""
        event = {"seq": len(run.events) + 1, "rank": event.pop("rank", None),
                 "t": round(event.pop("t", time.monotonic() - run.t0), 6), **event}
        run.events.append(event)
        self._recording(run.id).append(json.dumps(event, separators=(",", ":")) + "\n")
        self.hub.publish(run.id, event)
        if event["rank"] is not None:          # the server's own events (pause, continue) are no progress
            run.last_event_at = time.monotonic()
        if event["kind"] == "gate":
            if event.get("phase") == "waiting":
                run.waiting[event["rank"]] = event
            else:
                run.waiting.pop(event["rank"], None)
        if event["kind"] == "log" and event.get("level") == "error" and event["rank"] is not None:
            run.rank_errors.setdefault(event["rank"], event)
        return event

    async def _on_channel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        run, rank = None, None
        try:
            hello = decode(await reader.readline())
            run = self.runs.get(str(hello.get("hello")))
            if run is None or run.final or not hmac.compare_digest(str(hello.get("token")), run.token):
                return
            rank = hello.get("rank")
            if rank is not None:
                run.channels_open += 1
                run.writers[rank] = writer
            while line := await reader.readline():
                self._take(run, rank, decode(line))
        except (ValueError, ConnectionError, asyncio.IncompleteReadError) as exc:
            log.warning("event channel of run %s rank %s: %s", run and run.id, rank, exc)
        finally:
            if run is not None and rank is not None:
                run.channels_open -= 1
                run.writers.pop(rank, None)
                run.waiting.pop(rank, None)
            writer.close()

    def _take(self, run: Run, rank: int | None, message: dict) -> None:
        if run.final:
            return
        if "blob" in message:
            self._recording(run.id).save_tensor(message)
        elif "supervisor" in message:
            run.report = message
            self._spawn(self._conclude(run))
        else:
            message["rank"] = rank   # a rank speaks only for itself
            if (wrong := problem(message)) is not None:   # never shown: the run fails, naming the field
                self._kill(run)
                self._finish(run, "failed", {"kind": "protocol", "rank": rank, "message": f"rank {rank} sent {wrong}"})
                return
            run.last_event_at = time.monotonic()
            self._record_all(run, run.order.admit(message))

    def _record_all(self, run: Run, events: list[dict]) -> None:
        for event in events:
            self.record(run, event)

    # ---- scheduling and ending -------------------------------------------------------------------
    async def _schedule(self) -> None:
        while True:
            run_id = await self._queue.get()
            await self._slots.acquire()
            run = self.runs.get(run_id)
            if run is None or run.final:
                self._slots.release()
                continue
            self._spawn(self._execute(run))

    def _announce_positions(self) -> None:
        """Each queued run's place in the queue, told again whenever a run ahead of it leaves."""
        queued = sorted((r for r in self.runs.values() if r.status == "queued"), key=lambda r: r.created_at)
        for position, run in enumerate(queued, 1):
            if run.position != position:
                run.position = position
                self.record(run, {"kind": "run", "status": "queued", "position": position})

    def time_limit(self, run: Run) -> float:
        """Step mode waits on a person, so it gets the longer limit."""
        return self.settings.STEP_TIME_LIMIT_S if run.step else self.settings.RUN_TIME_LIMIT_S

    async def _execute(self, run: Run) -> None:
        try:
            request = LaunchRequest(
                run_id=run.id, token=run.token, lesson=run.lesson, world_size=run.world_size,
                events_address=self.events_address, t0=run.t0,
                time_limit_s=self.time_limit(run), params=run.params,
                backend=run.backend, step=run.step, output_bytes=self.settings.MAX_RANK_OUTPUT_BYTES)
            run.status = "running"
            self.record(run, {"kind": "run", "status": "running", "backend": run.backend})
            self._announce_positions()
            run.pid = await self.launcher.launch(request)
            run.last_control_at = time.monotonic()
            if run.final:            # cancelled while its ranks were being started: stop them now
                self._kill(run)
                return
            watchdog = self._spawn(self._watch_for_hang(run))
            try:
                await asyncio.wait_for(run.finished.wait(), self.time_limit(run) + _KILL_GRACE_S)
            except asyncio.TimeoutError:
                self._kill(run)
                self._finish(run, "failed", self._timeout_error(run))
            finally:
                watchdog.cancel()
        except Exception as exc:   # the launcher failed: the run fails, the server goes on
            log.exception("run %s could not be launched", run.id)
            self._finish(run, "failed", {"kind": "launch", "message": f"could not start the ranks: {exc}"})
        finally:
            self._slots.release()

    async def _watch_for_hang(self, run: Run) -> None:
        """A run is hung when some rank sits inside a collective or send/recv, no event has come for
        `hang_timeout_s`, and no rank is waiting at a step-mode gate (that is a person's pause).
        It also ends a run whose supervisor died, and a step-mode run left waiting too long."""
        while not run.final:
            await asyncio.sleep(min(0.25, run.hang_timeout_s / 4))
            self._record_all(run, run.order.overdue())
            if self._supervisor_died(run) or self._idle_too_long(run):
                return
            quiet = time.monotonic() - run.last_event_at
            if quiet < run.hang_timeout_s or run.waiting or run.report is not None:
                continue
            self._record_all(run, run.order.flush())
            if flight_recorder.open_calls(run.events, run.world_size):
                self._kill(run)
                report = flight_recorder.diagnose(run.events, run.world_size)
                message = f"hung for {run.hang_timeout_s:g} s: {report.pop('message')}"
                self._finish(run, "failed", {"kind": "hang", "message": message, **report})

    def _supervisor_died(self, run: Run) -> bool:
        """The supervisor is gone without its report (killed; or the launcher died, taking it along):
        the ranks went with it. Given the report's own time to arrive, the run fails saying so."""
        if run.pid is None or run.report is not None or _process_exists(run.pid):
            return False
        now = time.monotonic()
        run.supervisor_gone_at = run.supervisor_gone_at or now
        if now - run.supervisor_gone_at < _CHANNEL_DRAIN_S:
            return False
        self._kill(run)
        self._finish(run, "failed", {"kind": "supervisor", "message": (
            f"the run's supervisor (pid {run.pid}) died without reporting; its ranks were stopped with it")})
        return True

    def _idle_too_long(self, run: Run) -> bool:
        """A step-mode run whose ranks wait at their gates with nobody stepping holds a run slot:
        after STEP_IDLE_LIMIT_S it ends, and gives the slot back."""
        limit = self.settings.STEP_IDLE_LIMIT_S
        if not run.waiting or time.monotonic() - max(run.last_control_at, run.last_event_at) < limit:
            return False
        self._kill(run)
        self._finish(run, "failed", {"kind": "idle", "message": (
            f"nobody stepped, continued or paused this run for {limit:g} s; it was ended to free its slot")})
        return True

    # ---- step mode -------------------------------------------------------------------------
    def _control_allowed(self, run: Run) -> bool:
        """A token bucket per run: CONTROL_RATE_PER_S messages a second, bursts of twice that."""
        rate = self.settings.CONTROL_RATE_PER_S
        now = time.monotonic()
        allowance = 2 * rate if run.control_allowance is None else run.control_allowance
        allowance = min(2 * rate, allowance + (now - run.last_control_at) * rate)
        run.last_control_at = now
        if allowance < 1:
            run.control_allowance = allowance
            return False
        run.control_allowance = allowance - 1
        return True

    def control(self, run: Run, message: dict) -> str | None:
        """Apply a control message (`step` [rank], `continue`, `pause`); an error text, or None."""
        op = message.get("op")
        if run.final:
            return f"run {run.id} has ended"
        if not self._control_allowed(run):
            return (f"too many control messages for run {run.id}: at most "
                    f"{self.settings.CONTROL_RATE_PER_S:g} a second")
        if op == "step":
            rank = message.get("rank")
            if rank is None:
                targets = sorted(run.waiting)
            elif isinstance(rank, bool) or not isinstance(rank, int) or rank not in run.waiting:
                return f"rank {rank} is not waiting at a gate"
            else:
                targets = [rank]
            for released in targets:          # released now: a second "step" must not release it again
                run.waiting.pop(released, None)
            self._tell(run, targets, {"release": True})
        elif op in ("continue", "pause"):
            stepping = op == "pause"
            self._tell(run, sorted(run.writers), {"stepping": stepping})
            if stepping != run.stepping:     # said again, it changes nothing: the log does not grow
                run.stepping = stepping
                self.record(run, {"kind": "run", "status": "running", "stepping": stepping})
        else:
            return f"unknown control op {op!r}"
        return None

    @staticmethod
    def _tell(run: Run, ranks: list[int], message: dict) -> None:
        line = (json.dumps(message) + "\n").encode()
        for rank in ranks:
            writer = run.writers.get(rank)
            if writer is not None and not writer.is_closing():
                writer.write(line)

    async def _conclude(self, run: Run) -> None:
        """The supervisor has reported: let the ranks' last events arrive, then end the run."""
        deadline = time.monotonic() + _CHANNEL_DRAIN_S
        while run.channels_open > 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        if run.final:
            return
        self._record_all(run, run.order.flush())
        report = run.report or {}
        self._record_output(run, report.get("output"))
        if report.get("timed_out"):
            self._finish(run, "failed", self._timeout_error(run))
            return
        failed = [e for e in report.get("exits", []) if e["code"] != 0 and not e.get("stopped")]
        if not failed:
            self._finish(run, "done", None)
        else:
            error = flight_recorder.explain_crash(self._crash_error(run, failed), run.events, run.world_size)
            self._finish(run, "failed", error)

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
            self.record(run, {"kind": "log", "level": "output", "rank": entry["rank"], "message": message,
                              "output": tail, "output_bytes": printed, "dropped_bytes": dropped})

    def _crash_error(self, run: Run, failed: list[dict]) -> dict:
        # A rank whose own collective or send/recv failed was most likely cut off by another rank's
        # death (the supervisor may reap that one second): name the others first.
        first = min(failed, key=lambda e: (self._failed_in_communication(run, e["rank"]), e["rank"]))
        rank = first["rank"]
        raised = run.rank_errors.get(rank)
        if raised is not None:
            return {"kind": "crash", "rank": rank, "message": f"rank {rank} raised {raised['message']}",
                    "site": raised.get("site"), "traceback": raised.get("traceback")}
        code = first["code"]
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
        return {"kind": "crash", "rank": rank, "message": f"rank {rank} {how}",
                "site": self._last_site(run, rank)}

    def _timeout_error(self, run: Run) -> dict:
        limit = self.time_limit(run)   # a step-mode run has the longer limit
        where = {r: self._last_site(run, r) for r in range(run.world_size)}
        return {"kind": "timeout", "message": f"the run passed its wall-clock limit of {limit:g} s",
                "ranks": {str(r): site for r, site in where.items()}}

    @staticmethod
    def _failed_in_communication(run: Run, rank: int) -> bool:
        return any(e.get("rank") == rank and e.get("phase") == "end" and "error" in e for e in run.events)

    @staticmethod
    def _last_site(run: Run, rank: int) -> str | None:
        for event in reversed(run.events):
            if event.get("rank") == rank and event.get("site"):
                return event["site"]
        return None

    def _finish(self, run: Run, status: str, error: dict | None) -> None:
        if run.final:
            return
        was_queued = run.status == "queued"
        self._record_all(run, run.order.flush())
        run.status, run.error = status, error
        event = {"kind": "run", "status": status}
        if error:
            event["error"] = error
        self.record(run, event)
        recording = self._recording(run.id)
        recording.flush()
        recording.save_meta(self._index(run))
        run.finished.set()
        if was_queued:
            self._announce_positions()
        self._forget_old_runs()

    def _forget_old_runs(self) -> None:
        """Keep at most RUNS_IN_MEMORY ended runs in memory, the least recently used go (they are
        on disk and come back on the next `get`)."""
        ended = [run_id for run_id, run in self.runs.items() if run.final]
        for run_id in ended[: max(len(ended) - self.settings.RUNS_IN_MEMORY, 0)]:
            del self.runs[run_id]
            recording = self._recordings.pop(run_id, None)
            if recording is not None:
                recording.close()

    def in_flight(self, owner: str, step_only: bool = False) -> int:
        """How many of `owner`'s runs are queued or running (only step-mode ones, if asked)."""
        return sum(1 for r in self.runs.values() if r.owner == owner and not r.final and (r.step or not step_only))

    @staticmethod
    def _kill(run: Run) -> None:
        if run.pid is None:
            return
        try:
            os.killpg(run.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
