"""The order a learner steps through is causal: events arrive from the ranks' channels in whatever order
the sockets deliver them, so a collective's `end` on one rank can arrive before another member's
`begin`, and the page would show a sum held before every rank had given its part. `CausalOrder` holds
such an event back until what it depends on has been let through:

- each rank's own events stay in their order (a held event holds the rest of its rank behind it);
- a collective's `end` waits for the `begin` of every member whose data it received — every member
  for all-reduce, all-gather, reduce-scatter, all-to-all and barrier; only the root for a non-root's
  broadcast or scatter; everyone for the root of a reduce or gather. A rank that only gives (a
  broadcast's root, a reduce's non-root) can leave before the others arrive, and really does;
- a receive's `end` waits for the `begin` of the send it matched (the k-th send from A to B with a
  tag is the k-th receive on B from A with that tag, as gloo matches them).

These are the real data dependencies of the calls, so they form no cycle; an event held longer than
`max_hold_s` (a dependency the log will never hold: a member that crashed, an untraced call) is let
through anyway, and `flush` lets everything through when the run ends.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from typing import Callable

ROOT_GIVES = {"broadcast", "scatter"}     # data flows from the root: non-roots wait for the root only
ROOT_TAKES = {"reduce", "gather"}         # data flows to the root: the root waits for everyone


def _collective_key(event: dict) -> tuple:
    return event.get("group"), tuple(event.get("ranks") or ()), event.get("cseq")


def _needed_members(event: dict) -> list[int]:
    """Whose `begin` this collective `end` depends on."""
    members = list(event.get("ranks") or ())
    root = event.get("root")
    op = event.get("op")
    if op in ROOT_GIVES and root is not None:
        return [] if event["rank"] == root else [root]
    if op in ROOT_TAKES and root is not None:
        return members if event["rank"] == root else []
    return members


class CausalOrder:
    """Takes events as they arrive (`admit`) and returns those that may now be recorded, in order."""

    def __init__(self, max_hold_s: float = 2.0, clock: Callable[[], float] = time.monotonic):
        self.max_hold_s = max_hold_s
        self.clock = clock
        self._held: dict[object, deque[tuple[float, dict]]] = {}   # rank → (arrival, event), oldest first
        self._begun: dict[tuple, set[int]] = {}                      # collective → members whose begin passed
        self._sends: Counter[tuple] = Counter()                      # (src, dst, tag) → sends begun
        self._recvs: Counter[tuple] = Counter()                      # (src, dst, tag) → receives ended

    def admit(self, event: dict) -> list[dict]:
        rank = event.get("rank")
        queue = self._held.get(rank)
        if not queue and self._ready(event):
            self._pass(event)
            return [event, *self._drain()]
        self._held.setdefault(rank, deque()).append((self.clock(), event))
        return []

    def overdue(self) -> list[dict]:
        """Let through the events held longer than `max_hold_s` (and what waited behind them)."""
        released = []
        now = self.clock()
        for queue in self._held.values():
            while queue and now - queue[0][0] > self.max_hold_s:
                released.append(self._pass(queue.popleft()[1]))
        return released + self._drain() if released else released

    def flush(self) -> list[dict]:
        """Everything still held, rank by rank in arrival order (the run has ended)."""
        released = self._drain()
        for queue in self._held.values():
            while queue:
                released.append(self._pass(queue.popleft()[1]))
        return released

    @property
    def holding(self) -> int:
        return sum(len(q) for q in self._held.values())

    def _drain(self) -> list[dict]:
        released, progress = [], True
        while progress:
            progress = False
            for queue in self._held.values():
                while queue and self._ready(queue[0][1]):
                    released.append(self._pass(queue.popleft()[1]))
                    progress = True
        return released

    def _ready(self, event: dict) -> bool:
        if event.get("phase") != "end" or "error" in event:
            return True
        if event.get("kind") == "collective":
            begun = self._begun.get(_collective_key(event), set())
            return all(member in begun for member in _needed_members(event))
        if event.get("kind") == "p2p" and event.get("op") == "recv" and event.get("peer") is not None:
            link = (event["peer"], event["rank"], event.get("tag", 0))
            return self._sends[link] > self._recvs[link]
        return True

    def _pass(self, event: dict) -> dict:
        kind, phase = event.get("kind"), event.get("phase")
        if kind == "collective" and phase == "begin":
            self._begun.setdefault(_collective_key(event), set()).add(event.get("rank"))
        elif kind == "p2p" and event.get("op") == "send" and phase == "begin":
            self._sends[(event.get("rank"), event.get("peer"), event.get("tag", 0))] += 1
        elif kind == "p2p" and event.get("op") == "recv" and phase == "end" and event.get("peer") is not None:
            self._recvs[(event["peer"], event.get("rank"), event.get("tag", 0))] += 1
        return event
