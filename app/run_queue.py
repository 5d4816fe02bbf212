"""The run queue: runs wait in the order they came for one of MAX_CONCURRENT_RUNS slots (each told
its place as runs ahead leave), then the warm launcher starts their ranks and the run is watched until
it ends or passes its time limit. On a Ray cluster (app/cluster.py) the slot is the run's placement
group instead: the run at the head of the queue waits until the cluster has its ranks' resources free."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from app.launcher import Launcher
from app.messages import run_error, say
from app.run import Run
from app.run_outcome import Outcome
from app.run_store import RunStore
from app.settings import Settings
from workers.launch_request import LaunchRequest
from workers.protocol import Host as HostEvent, Run as RunEvent

log = logging.getLogger("paralab.runs")

KILL_GRACE_S = 5.0         # the server's own limit is the run's limit plus this
STAYS_LOCAL = ("script",)  # with a cluster, one's own program still runs on the server's machine (its
                           # ranks meet at a FileStore, and the hosted lab's run inside the local sandbox)


class QueueFull(Exception):
    def __init__(self, queued: int):
        super().__init__(f"{queued} runs are already queued; try again shortly")
        self.queued = queued


class RunQueue:
    def __init__(self, settings: Settings, store: RunStore, outcome: Outcome, launcher: Launcher,
                 events_address: Callable[[], str], spawn: Callable, cluster=None):
        self.settings = settings
        self.store = store
        self.outcome = outcome
        self.launcher = launcher
        self.events_address = events_address   # where the ranks send their events (known once started)
        self.spawn = spawn
        self.cluster = cluster                 # app/cluster.py's RayCluster, or None: this machine's launcher
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._slots = asyncio.Semaphore(settings.MAX_CONCURRENT_RUNS)

    def put(self, run: Run) -> None:
        queued = sum(1 for r in self.store.runs.values() if r.status == "queued")
        if queued >= self.settings.MAX_QUEUED_RUNS:
            raise QueueFull(queued)
        self.store.add(run)
        self.announce_positions()
        self._queue.put_nowait(run.id)

    def announce_positions(self) -> None:
        """Each queued run's place in the queue, told again whenever a run ahead of it leaves."""
        queued = sorted((r for r in self.store.runs.values() if r.status == "queued"), key=lambda r: r.created_at)
        for position, run in enumerate(queued, 1):
            if run.position != position:
                run.position = position
                self.store.record(run, RunEvent(t=run.now(), status="queued", position=position).to_dict())

    async def serve(self) -> None:
        while True:
            run_id = await self._queue.get()
            if self.cluster is not None and getattr(self.store.runs.get(run_id), "lesson", None) not in STAYS_LOCAL:
                await self._place(run_id)
                continue
            await self._slots.acquire()
            run = self.store.runs.get(run_id)
            if run is None or run.final:
                self._slots.release()
                continue
            self.spawn(self._execute(run))

    async def _place(self, run_id: str) -> None:
        """The head of the queue waits for its placement group, then its ranks start on those nodes."""
        run = self.store.runs.get(run_id)
        if run is None or run.final:
            return
        try:
            placement = await self.cluster.reserve(run.world_size, run.placement or "pack", run.backend,
                                                   gave_up=lambda: run.final)
        except Exception as exc:
            log.exception("run %s could not be placed", run.id)
            self.outcome.finish(run, "failed", run_error("launch", say(
                "run.launch_failed", "could not start the ranks: {reason}", reason=str(exc))))
            return
        if placement is not None:
            self.spawn(self._execute(run, placement))

    async def _execute(self, run: Run, placement=None) -> None:
        try:
            request = LaunchRequest(
                run_id=run.id, token=run.token, lesson=run.lesson, world_size=run.world_size,
                events_address=self.events_address(), t0=run.t0,
                time_limit_s=self.outcome.time_limit(run), params=run.params,
                backend=run.backend, step=run.step, output_bytes=self.settings.MAX_RANK_OUTPUT_BYTES,
                sandboxed=run.owner is not None and run.lesson == "script")   # a hosted-lab user's own code
            run.status = "running"
            self.store.record(run, RunEvent(t=run.now(), status="running", backend=run.backend).to_dict())
            self.announce_positions()
            await self._start_ranks(run, request, placement)
            run.last_control_at = time.monotonic()
            if run.final:            # cancelled while its ranks were being started: stop them now
                self.outcome.kill(run)
                return
            watchdog = self.spawn(self.outcome.watch(run))
            try:
                await asyncio.wait_for(run.finished.wait(), self.outcome.time_limit(run) + KILL_GRACE_S)
            except asyncio.TimeoutError:
                self.outcome.kill(run)
                self.outcome.finish(run, "failed", self.outcome.timeout_error(run))
            finally:
                watchdog.cancel()
        except Exception as exc:   # the launcher failed: the run fails, the server goes on
            log.exception("run %s could not be launched", run.id)
            self.outcome.finish(run, "failed", run_error("launch", say("run.launch_failed", "could not start the ranks: {reason}", reason=str(exc))))
        finally:
            if placement is None:
                self._slots.release()
            else:
                self.cluster.release(placement)

    async def _start_ranks(self, run: Run, request: LaunchRequest, placement) -> None:
        """This machine's launcher forks them (run.pid: their process group); on a cluster, each node's
        launcher forks its own (run.remote), and a `host` event says which ranks ran where."""
        if placement is None:
            run.pid = await self.launcher.launch(request)
            return
        run.remote = await self.cluster.launch(request, placement)
        run.reports_expected = len(run.remote.supervisors)
        for host in self.cluster.host_events(run.remote):
            self.store.record(run, HostEvent(t=run.now(), **host).to_dict())
