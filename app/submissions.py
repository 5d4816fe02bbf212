"""The fair judge queue: round-robin across users, so thirty students who submit at once each get
their first submission judged before anyone's second. `JUDGE_CONCURRENCY` workers take the next
submission in turn and judge it in a thread (the sandbox is a subprocess); a user may have at most
`MAX_SUBMISSIONS_PER_USER` queued or being judged. Every submission and verdict is kept in SQLite.

Cancelling takes a waiting submission out of the queue; one being judged has its sandbox's whole
process group killed at once (its `stop` event), which frees its judge slot.

A verdict keeps the run the judge watched: recorded as a run of the submission's owner
(app/judged_runs.py), to be stepped through from the problem's page.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from app.accounts import Accounts
from app.judged_runs import judged_run
from app.messages import say
from app.run_store import RunStore
from app.settings import Settings

log = logging.getLogger("paralab.submissions")

CANCELLED_WAITING = "cancelled before it was judged"
CANCELLED_JUDGING = "cancelled while it was being judged; its processes were stopped"
STOP_WAIT_S = 10.0         # a cancel waits at most this long for the judged processes to be gone


class TooMany(Exception):
    pass


class FairQueue:
    """Per-user FIFO queues served round-robin. A user who has just been served goes to the back."""

    def __init__(self):
        self._users: OrderedDict[str, deque[str]] = OrderedDict()

    def put(self, user: str, item: str) -> None:
        self._users.setdefault(user, deque()).append(item)

    def take(self) -> tuple[str, str] | None:
        for user, items in self._users.items():
            item = items.popleft()
            del self._users[user]
            if items:
                self._users[user] = items     # back of the line
            return user, item
        return None

    def remove(self, item: str) -> bool:
        for user, items in self._users.items():
            if item in items:
                items.remove(item)
                if not items:
                    del self._users[user]
                return True
        return False

    def order(self) -> list[str]:
        """Every queued item in the order it will be taken."""
        queues = [list(items) for items in self._users.values()]
        out = []
        for k in range(max(map(len, queues), default=0)):
            out += [q[k] for q in queues if len(q) > k]
        return out

    def count(self, user: str) -> int:
        return len(self._users.get(user, ()))

    def __len__(self) -> int:
        return sum(map(len, self._users.values()))


@dataclass
class Judging:
    """A submission being judged: whose it is, the event that stops its processes, and the event set
    once they are gone."""
    user: str
    stop: threading.Event = field(default_factory=threading.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class Judge:
    """The queue, its workers and the submissions in flight."""

    def __init__(self, settings: Settings, accounts: Accounts, slots: asyncio.Semaphore, runs: RunStore | None = None,
                 cluster=None):
        self.settings, self.accounts, self.slots = settings, accounts, slots
        self.runs = runs                           # where each verdict's run is recorded (None: not kept)
        self.cluster = cluster          # a Ray cluster (app/cluster.py): each submission is judged on one of its nodes
        self.queue = FairQueue()
        self.judging: dict[str, Judging] = {}      # submission id → the one being judged now
        self._wake = asyncio.Event()
        self._started = 0
        self._workers: list[asyncio.Task] = []

    def start(self) -> None:
        self._started = self.accounts.max_started()
        self._workers = [asyncio.create_task(self._work()) for _ in range(self.settings.JUDGE_CONCURRENCY)]

    async def stop(self) -> None:
        for judging in self.judging.values():
            judging.stop.set()
        for task in self._workers:
            task.cancel()

    def in_flight(self, user: str) -> int:
        return self.queue.count(user) + sum(1 for j in self.judging.values() if j.user == user)

    def submit(self, user: str, problem: str, code: str) -> str:
        limit = self.settings.MAX_SUBMISSIONS_PER_USER
        if self.in_flight(user) >= limit:
            raise TooMany(say("lab.submissions_quota", "you have {limit} submissions waiting or being judged; "
                              "wait for one to finish", limit=limit))
        sid = self.accounts.add_submission(user, problem, code)
        self.queue.put(user, sid)
        self._wake.set()
        return sid

    def position(self, sid: str) -> int | None:
        """1 = judged next. None when it is not waiting."""
        order = self.queue.order()
        return order.index(sid) + 1 if sid in order else None

    async def cancel(self, sid: str) -> bool:
        """Cancel a waiting submission, or one being judged: its processes are gone when this returns.
        False when it has a verdict already."""
        if self.queue.remove(sid):
            return self.accounts.finish_submission(sid, "cancelled", [], CANCELLED_WAITING)
        judging = self.judging.get(sid)
        if judging is None:
            return False
        cancelled = self.accounts.finish_submission(sid, "cancelled", [], CANCELLED_JUDGING)
        judging.stop.set()
        try:
            await asyncio.wait_for(judging.ended.wait(), STOP_WAIT_S)
        except asyncio.TimeoutError:
            log.warning("submission %s: its processes outlived the cancel by %g s", sid, STOP_WAIT_S)
        return cancelled

    async def _work(self) -> None:
        while True:
            taken = self.queue.take()
            if taken is None:
                self._wake.clear()
                await self._wake.wait()
                continue
            await self._judge(*taken)

    async def _judge_on_cluster(self, submission: dict, stop: threading.Event):
        """The verdict from a cluster node's sandbox; its note says which node judged it."""
        from workers.judge import Verdict
        from workers.problems import PROBLEMS

        fields = await self.cluster.judge(submission["problem"], submission["code"], self.settings.ALLOW_UNSANDBOXED,
                                          PROBLEMS[submission["problem"]].world_size, stop)
        node = fields.pop("node", None)
        verdict = Verdict(**fields)
        if node:
            verdict.note = "; ".join(filter(None, [verdict.note, f"judged on cluster node {node}"]))
        return verdict

    async def _judge(self, user: str, sid: str) -> None:
        from workers.judge import judge
        judging = self.judging[sid] = Judging(user)
        try:
            self._started += 1
            self.accounts.mark_judging(sid, self._started)
            submission = self.accounts.submission(sid)
            async with self.slots:
                if self.cluster is not None:
                    verdict = await self._judge_on_cluster(submission, judging.stop)
                else:
                    verdict = await asyncio.to_thread(judge, submission["problem"], submission["code"],
                                                      allow_unsandboxed=self.settings.ALLOW_UNSANDBOXED,
                                                      stop=judging.stop)
            if not judging.stop.is_set():            # a cancelled submission keeps no run
                self._keep_run(submission, verdict)
            self.accounts.finish_submission(sid, verdict.status, verdict.checks, verdict.reason,  # not over a cancel
                                            verdict.note)
        except asyncio.CancelledError:
            raise
        except Exception as exc:     # the judge itself broke: say so, keep serving
            log.exception("judging submission %s", sid)
            self.accounts.finish_submission(sid, "refused", [], f"the judge failed: {exc}")
        finally:
            self.judging.pop(sid, None)
            judging.ended.set()

    def _keep_run(self, submission: dict, verdict) -> None:
        """Record the run behind a verdict (before the verdict shows, so its link works at once); a
        submission that never ran (refused before its ranks started) has none."""
        from workers.problems import PROBLEMS
        if self.runs is None or not verdict.events:
            return
        try:
            self.runs.add_recorded(*judged_run(submission, verdict, PROBLEMS[submission["problem"]].world_size))
        except OSError:
            log.exception("submission %s: its run could not be recorded", submission["id"])
