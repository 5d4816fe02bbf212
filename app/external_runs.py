"""Jobs started outside the server (`paralab trace -- torchrun …`, or PARALAB_SERVER=URL): each rank
joins its job's run over HTTP (app/routes/external.py), then posts its events in batches. A job — one
torchrun job id and restart — is one run, whatever the number of nodes.

Times: a rank stamps its events with its host's monotonic clock, and measures, before its first
batch, how far that clock is from the server's (the best of a few round trips). The first
measurement of each node is that node's clock: every event of its ranks is put on the server's clock
with it, so the ranks of one node keep their order exactly, and two nodes are aligned to within the
node's `skew_s` (half that best round trip), which the `host` event says and the page shows.

A job ends when each of its ranks has said goodbye (done; failed if a rank raised), or when it has
been silent for EXTERNAL_IDLE_S (its ranks were killed, or the server lost them). Once a rank has
failed or been stopped, torchrun is tearing the job down: a rank that has not said goodbye
FAILING_GRACE_S later was killed without warning (SIGKILL, out of memory), and the run ends naming it.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass, field

from app import flight_recorder
from app.flight_recorder import ranks_phrase
from app.messages import run_error, say
from app.run import Run
from app.runs import RunManager
from workers.protocol import Host, Log, Rank, Run as RunEvent

TIME_FIELDS = ("t", "t_call")     # an event's times, on its host's clock until the server moves them
FAILING_GRACE_S = 5.0             # after a rank failed or was stopped, how long the others have to say goodbye


@dataclass
class NodeClock:
    host: str
    offset_s: float               # server clock − host clock
    skew_s: float
    ranks: list[int] = field(default_factory=list)


@dataclass
class Job:
    key: str
    run: Run
    nodes: dict[int, NodeClock] = field(default_factory=dict)
    joined: dict[int, str] = field(default_factory=dict)     # rank → the process that joined as it
    gone: set[int] = field(default_factory=set)        # ranks that said goodbye
    stopped: dict[int, str] = field(default_factory=dict)   # rank → the signal its launcher stopped it with
    failing_since: float | None = None   # monotonic time of the first goodbye of a rank that failed or was stopped


class ExternalRuns:
    def __init__(self, manager: RunManager, idle_s: float):
        self.manager = manager
        self.idle_s = idle_s
        self._jobs: dict[str, Job] = {}           # job key → the job's open run
        self._by_run: dict[str, Job] = {}

    def join(self, key: str, world_size: int, rank: int, member: str = "", owner: str | None = None,
             script: dict | None = None) -> Run:
        """The run of job `key` (opened by its first rank). A rank joining again from another process
        means a new job under the same key (torchrun reused the id): it gets a new run; from the same
        process (`member`: its join was sent again, the answer lost) it is the same run. The first
        `script` a rank brings ({"path", "text"}: each node's first rank does) is the run's source."""
        job = self._jobs.get(key)
        again = job is not None and rank in job.joined and (not member or job.joined[rank] != member)
        if job is None or job.run.final or again or job.run.world_size != world_size:
            job = self._open(key, world_size, owner)
        job.joined[rank] = member
        if script is not None and "source" not in job.run.params:
            job.run.params.update(source=script["text"], filename=script["path"])
        return job.run

    def job(self, run_id: str) -> Job | None:
        return self._by_run.get(run_id)

    def _open(self, key: str, world_size: int, owner: str | None) -> Job:
        run = Run(id=secrets.token_hex(6), lesson="torchrun", world_size=world_size, params={"job": key},
                  backend="unknown", owner=owner, status="running")
        job = self._jobs[key] = self._by_run[run.id] = Job(key, run)
        self.manager.store.add(run)
        self.manager.record(run, RunEvent(t=run.now(), status="running").to_dict())
        self.manager._spawn(self._watch(job))
        return job

    def take(self, job: Job, rank: int, node: int, host: str, clock: dict, messages: list[dict],
             backend: str | None = None) -> None:
        """One batch from `rank` of `node`: its events on the server's clock, recorded as a rank's."""
        run = job.run
        if run.final:
            return
        if backend and run.backend == "unknown":
            run.backend = backend
        nodeclock = self._clock(job, node, host, clock, rank)
        shift = nodeclock.offset_s - run.t0
        for message in messages:
            if "supervisor" in message:          # a rank speaks for itself, never as a supervisor
                continue
            for name in TIME_FIELDS:
                if isinstance(message.get(name), (int, float)):
                    message[name] = message[name] + shift
            self.manager.ingest.take(run, rank, message)

    def goodbye(self, job: Job, rank: int, sent: int, dropped: int, stopped: str | None = None) -> None:
        """`rank` has ended (or was stopped by a signal): what it could not deliver is said in the log;
        the last rank ends the run."""
        run = job.run
        if run.final:
            return
        if stopped:
            job.stopped[rank] = stopped
            self.manager.record(run, Log(rank=rank, t=run.now(), level="warning",
                                         message=f"rank {rank} was stopped by {stopped}").to_dict())
        if dropped:
            self.manager.record(run, Log(rank=rank, t=run.now(), level="warning", message=(
                f"rank {rank} dropped {dropped} of its {sent + dropped} events (the server was out of reach "
                "or its queue was full)")).to_dict())
        if rank not in run.rank_errors and not stopped:
            self.manager.ingest.take(run, rank, Rank(rank=rank, t=run.now(), status="finished").to_dict())
        job.gone.add(rank)
        if (stopped or rank in run.rank_errors) and job.failing_since is None:
            job.failing_since = time.monotonic()
        if len(job.gone) >= run.world_size:
            self._end(job)

    def _clock(self, job: Job, node: int, host: str, clock: dict, rank: int) -> NodeClock:
        nodeclock = job.nodes.get(node)
        if nodeclock is None:
            nodeclock = job.nodes[node] = NodeClock(host, float(clock["offset"]), float(clock["rtt"]) / 2)
        if rank not in nodeclock.ranks:
            nodeclock.ranks = sorted([*nodeclock.ranks, rank])
            self.manager.record(job.run, Host(t=job.run.now(), node=node, host=nodeclock.host, ranks=nodeclock.ranks,
                                              offset_s=nodeclock.offset_s, skew_s=nodeclock.skew_s).to_dict())
        return nodeclock

    def _end(self, job: Job) -> None:
        run = job.run
        self.manager.outcome.record_all(run, run.order.flush())
        if run.rank_errors:      # named as a lesson's crash is: the rank that raised first of its own accord
            failed = [{"rank": rank, "code": 1} for rank in sorted(run.rank_errors)]
            error = flight_recorder.explain_crash(self.manager.outcome._crash_error(run, failed), run.events, run.world_size)
        elif job.stopped:
            ranks = sorted(job.stopped)
            error = run_error("stopped", say("job.stopped", "the launcher stopped {ranks} ({signal}) before the end",
                                             ranks=ranks_phrase(ranks), signal=job.stopped[ranks[0]]), ranks=ranks)
        else:
            self.manager.outcome.finish(run, "done", None)
            return self._forget(job)
        vanished = sorted(set(range(run.world_size)) - job.gone)
        if vanished:             # torn down with the job before they could say goodbye
            error = {**error, "vanished": vanished, **say(
                "job.vanished", "{before}; the server never heard from {ranks} again: killed without warning "
                "(SIGKILL, out of memory) or cut off from the server", before=error, ranks=ranks_phrase(vanished),
            ).body("message")}
        self.manager.outcome.finish(run, "failed", error)
        self._forget(job)

    def _forget(self, job: Job) -> None:
        self._by_run.pop(job.run.id, None)
        if self._jobs.get(job.key) is job:
            del self._jobs[job.key]

    async def _watch(self, job: Job) -> None:
        """A job silent for `idle_s` (its ranks killed before their goodbye) ends, failed, saying so."""
        run = job.run
        while not run.final:
            await asyncio.sleep(min(1.0, self.idle_s / 4))
            self.manager.outcome.record_all(run, run.order.overdue())
            quiet = time.monotonic() - run.last_event_at
            if job.failing_since is not None and time.monotonic() - job.failing_since >= FAILING_GRACE_S:
                self._end(job)
            elif quiet >= self.idle_s and not run.final:
                missing = sorted(set(range(run.world_size)) - job.gone)
                self.manager.outcome.finish(run, "failed", run_error("silent", say(
                    "job.silent", "the job sent nothing for {seconds} s and {ranks} never said goodbye",
                    seconds=f"{self.idle_s:g}", ranks=ranks_phrase(missing)), ranks=missing))
        self._forget(job)
