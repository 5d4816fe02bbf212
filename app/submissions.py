"""The fair judge queue: round-robin across users, so thirty students who submit at once each get
their first submission judged before anyone's second. `JUDGE_CONCURRENCY` workers take the next
submission in turn and judge it in a thread (the sandbox is a subprocess); a user may have at most
`MAX_SUBMISSIONS_PER_USER` queued or being judged. Every submission and verdict is kept in SQLite.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque

from app.accounts import Accounts
from app.settings import Settings

log = logging.getLogger("paralab.submissions")


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


class Judge:
    """The queue, its workers and the submissions in flight."""

    def __init__(self, settings: Settings, accounts: Accounts, slots: asyncio.Semaphore):
        self.settings, self.accounts, self.slots = settings, accounts, slots
        self.queue = FairQueue()
        self.judging: dict[str, str] = {}      # submission id → user, being judged now
        self._wake = asyncio.Event()
        self._started = 0
        self._workers: list[asyncio.Task] = []

    def start(self) -> None:
        self._started = self.accounts.max_started()
        self._workers = [asyncio.create_task(self._work()) for _ in range(self.settings.JUDGE_CONCURRENCY)]

    async def stop(self) -> None:
        for task in self._workers:
            task.cancel()

    def in_flight(self, user: str) -> int:
        return self.queue.count(user) + sum(1 for u in self.judging.values() if u == user)

    def submit(self, user: str, problem: str, code: str) -> str:
        limit = self.settings.MAX_SUBMISSIONS_PER_USER
        if self.in_flight(user) >= limit:
            raise TooMany(f"you have {limit} submissions waiting or being judged; wait for one to finish")
        sid = self.accounts.add_submission(user, problem, code)
        self.queue.put(user, sid)
        self._wake.set()
        return sid

    def position(self, sid: str) -> int | None:
        """1 = judged next. None when it is not waiting."""
        order = self.queue.order()
        return order.index(sid) + 1 if sid in order else None

    def cancel(self, sid: str) -> bool:
        """A waiting submission is taken out of the queue; one being judged runs to its (bounded) end."""
        if self.queue.remove(sid):
            self.accounts.finish_submission(sid, "cancelled", [], "cancelled before it was judged")
            return True
        return False

    async def _work(self) -> None:
        from workers.judge import judge
        while True:
            taken = self.queue.take()
            if taken is None:
                self._wake.clear()
                await self._wake.wait()
                continue
            user, sid = taken
            self.judging[sid] = user
            try:
                self._started += 1
                self.accounts.mark_judging(sid, self._started)
                submission = self.accounts.submission(sid)
                async with self.slots:
                    verdict = await asyncio.to_thread(judge, submission["problem"], submission["code"],
                                                      allow_unsandboxed=self.settings.ALLOW_UNSANDBOXED)
                self.accounts.finish_submission(sid, verdict.status, verdict.checks, verdict.reason)
            except asyncio.CancelledError:
                raise
            except Exception as exc:     # the judge itself broke: say so, keep serving
                log.exception("judging submission %s", sid)
                self.accounts.finish_submission(sid, "refused", [], f"the judge failed: {exc}")
            finally:
                self.judging.pop(sid, None)
