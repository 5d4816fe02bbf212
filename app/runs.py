"""The run manager: what the routes, the rooms and the lab ask of runs, assembled from one module per
job — the store (app/run_store.py: runs, their logs, the recorded index), the queue
(app/run_queue.py: slots and launching), the event port (app/run_ingest.py), how a run ends
(app/run_outcome.py) and step mode (app/run_control.py)."""

from __future__ import annotations

import asyncio
import logging
import secrets

from app.hub import Hub
from app.launcher import Launcher
from app.messages import Message, run_error, say
from app.run import Run
from app.run_control import StepControl
from app.run_ingest import Ingest
from app.run_outcome import Outcome
from app.run_queue import QueueFull, RunQueue
from app.run_store import RunStore
from app.settings import Settings

__all__ = ["QueueFull", "Run", "RunManager"]

log = logging.getLogger("paralab.runs")


class RunManager:
    def __init__(self, settings: Settings, hub: Hub, launcher: Launcher | None = None):
        self.settings = settings
        self.hub = hub
        self.launcher = launcher or Launcher()
        self.cluster = _cluster(settings)      # None: every rank on this machine (the embedded default)
        self._tasks: set[asyncio.Task] = set()
        self.store = RunStore(settings, hub)
        self.outcome = Outcome(settings, self.store, on_end=self._ended)
        self.ingest = Ingest(settings, self.store, self.outcome, self._spawn)
        self.queue = RunQueue(settings, self.store, self.outcome, self.launcher, lambda: self.ingest.address, self._spawn,
                              cluster=self.cluster)
        self.steps = StepControl(settings, self.store)

    @property
    def runs(self) -> dict[str, Run]:
        return self.store.runs

    @property
    def runs_dir(self):
        return self.store.runs_dir

    @property
    def events_address(self) -> str:
        return self.ingest.address

    # ---- life cycle --------------------------------------------------------------------------
    async def start(self) -> None:
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.store.load_recorded()
        if self.cluster is not None:
            await self.cluster.start()
        await self.ingest.start(self.cluster.events_host if self.cluster else "127.0.0.1")
        self._spawn(self._keep_launcher())
        self._spawn(self.queue.serve())

    async def stop(self) -> None:
        for run in list(self.runs.values()):
            if not run.final:
                self.outcome.kill(run)
                self.outcome.finish(run, "cancelled", run_error("cancelled", say("run.server_stopped", "the server stopped")))
        for task in self._tasks:
            task.cancel()
        self.ingest.stop()
        await self.launcher.stop()
        if self.cluster is not None:
            await self.cluster.stop()
        self.store.close()

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

    def _ended(self, run: Run, was_queued: bool) -> None:
        if was_queued:
            self.queue.announce_positions()

    # ---- what the routes ask ------------------------------------------------------------------------
    def create(self, lesson: str, world_size: int, params: dict, step: bool, backend: str,
               hang_timeout_s: float | None = None, owner: str | None = None, room: str | None = None,
               placement: str | None = None) -> Run:
        """A new run, queued (QueueFull when the queue is full: nothing was created)."""
        run = Run(id=secrets.token_hex(6), lesson=lesson, world_size=world_size, params=params,
                  step=step, stepping=step, backend=backend, hang_timeout_s=hang_timeout_s or self.settings.HANG_TIMEOUT_S,
                  owner=owner, room=room, placement=placement or ("pack" if self.cluster else None))
        self.queue.put(run)
        return run

    def get(self, run_id: str) -> Run | None:
        return self.store.get(run_id)

    def list(self, limit: int = 50, owner: str | None = None) -> list[dict]:
        return self.store.list(limit, owner)

    def cancel(self, run: Run) -> None:
        if run.final:
            return
        self.outcome.kill(run)
        self.outcome.finish(run, "cancelled", run_error("cancelled", say("run.cancelled_by_user", "cancelled by the user")))

    def delete_owned_by(self, owner: str) -> int:
        """Cancel `owner`'s runs in flight and delete every run of theirs, recorded or in memory (their
        account is gone: a new account of the same name must not find them). Returns how many."""
        owned = self.store.owned_by(owner)
        for run_id in owned:
            run = self.runs.get(run_id)
            if run is not None:
                self.cancel(run)
            self.store.delete(run_id)
        return len(owned)

    def in_flight(self, owner: str, step_only: bool = False) -> int:
        """How many of `owner`'s runs are queued or running (only step-mode ones, if asked)."""
        return sum(1 for r in self.runs.values() if r.owner == owner and not r.final and (r.step or not step_only))

    def record(self, run: Run, event: dict) -> dict:
        return self.store.record(run, event)

    def events_since(self, run: Run, since: int) -> list[dict]:
        return self.store.events_since(run, since)

    def encoded_events_since(self, run: Run, since: int) -> bytes:
        return self.store.encoded_events_since(run, since)

    def tensor(self, run: Run, tensor_id: str) -> dict | None:
        return self.store.tensor(run, tensor_id)

    def control(self, run: Run, message: dict) -> Message | None:
        return self.steps.apply(run, message)


def _cluster(settings: Settings):
    """The Ray cluster the runs go to, if one is configured; Ray is imported only then."""
    if not settings.CLUSTER:
        return None
    from app.cluster import RayCluster
    return RayCluster(settings.CLUSTER)
