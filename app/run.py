"""One run's state in the server: what was asked, where it stands, and what its log says so far."""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass, field

from app.causal import CausalOrder
from workers.protocol import FINAL_STATUSES


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
    placement: str | None = None        # on a Ray cluster: "pack" or "spread" (app/cluster.py)
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
    remote: object | None = None        # on a Ray cluster: its ranks there (app/cluster.py's ClusterRun), not `pid`
    reports: list[dict] = field(default_factory=list)                # each node's supervisor's report so far
    reports_expected: int = 1                                        # one per node the run has ranks on
    events_received: int = 0            # the ranks' events taken so far (held back by `order` or recorded)
    tensor_bytes: int = 0               # full tensors' values stored so far
    tensors_not_kept: int = 0           # full tensors past MAX_RUN_TENSOR_BYTES, not stored

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
                "room": self.room, **({"placement": self.placement} if self.placement else {}),
                "hang_timeout_s": self.hang_timeout_s,
                "status": self.status, "error": self.error, "event_count": len(self.events)}

    def now(self) -> float:
        """Seconds since the run was created: the `t` of the server's own events."""
        return time.monotonic() - self.t0

    def note(self, event: dict) -> None:
        """Keep what the rest of the server asks of the log without reading it: progress, the ranks
        waiting at a step-mode gate, each rank's first error."""
        if event["rank"] is not None:          # the server's own events (pause, continue) are no progress
            self.last_event_at = time.monotonic()
        if event["kind"] == "gate":
            if event.get("phase") == "waiting":
                self.waiting[event["rank"]] = event
            else:
                self.waiting.pop(event["rank"], None)
        if event["kind"] == "log" and event.get("level") == "error" and event["rank"] is not None:
            self.rank_errors.setdefault(event["rank"], event)

    def last_site(self, rank: int) -> str | None:
        """The source line of this rank's latest event that names one."""
        for event in reversed(self.events):
            if event.get("rank") == rank and event.get("site"):
                return event["site"]
        return None
