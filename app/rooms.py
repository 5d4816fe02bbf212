"""Lecture rooms: a presenter drives, a hall follows.

A room has a short code (typed from the projector) and a presenter secret. It holds what followers
must see: the current run, the presenter's cursor in its event log (`seq`), and a small `view`
(panel, theme, …). What changes in the room goes out on the hub's topic `room:<code>`; each socket
reads it and the room's run's log through one log follower (app/log_follower.py), with one bounded
queue per follower: a follower too far behind is resynchronised, never waited for.
Rooms are saved under DATA_DIR/rooms/ and survive a restart. A room nobody is connected to and the
presenter has not changed for ROOM_TTL_S expires: refused like an unknown code, then deleted.

Messages to followers (JSON text): {"type": "state", …the room…}, {"type": "event", "run", "event"}
for each event of the room's current run, {"type": "followers", "count"}.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from app.hub import Hub
from app.log_follower import TextCache, event_text
from app.messages import Message, say
from app.runs import Run, RunManager

log = logging.getLogger("paralab.rooms")

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"   # no 0/O, 1/I: easy to read off a projector
CODE_LENGTH = 8                                       # 32⁸ ≈ 10¹² codes
MAX_VIEW_BYTES = 2048


def normalise_code(code: str) -> str:
    return re.sub(r"[\s-]", "", code).upper()


_EVENT_MESSAGES = TextCache()


def event_message(run_id: str, event: dict) -> str:
    """A follower's message for one event of the room's run, encoded once for all the followers (an
    event is of one run only)."""
    return _EVENT_MESSAGES.text(
        event, lambda e: f'{{"type":"event","run":{json.dumps(run_id)},"event":{event_text(e)}}}')


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass
class Room:
    code: str
    secret_digest: str
    created_at: float = field(default_factory=time.time)
    active_at: float = field(default_factory=time.time)
    run: str | None = None
    cursor: int = 0                 # the presenter's position (seq) in the run's event log
    view: dict = field(default_factory=dict)

    def public(self, followers: int) -> dict:
        return {"type": "state", "code": self.code, "run": self.run, "cursor": self.cursor,
                "view": self.view, "followers": followers}


class RoomError(Exception):
    """A refused request: the room is left as it was."""


class RoomManager:
    def __init__(self, data_dir: Path, hub: Hub, runs: RunManager, ttl_s: float,
                 clock: Callable[[], float] = time.time):
        self.dir = data_dir / "rooms"
        self.hub, self.runs, self.ttl_s = hub, runs, ttl_s
        self._clock = clock                             # wall time: saved, and compared after a restart
        self.rooms: dict[str, Room] = {}
        self._counts: dict[str, int] = {}
        self._occupied: set[str] = set()                # rooms someone was connected to a second ago
        self.presenters: dict[str, int] = {}            # presenter sockets per room (not followers)
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        for path in self.dir.glob("*.json"):
            try:
                room = Room(**json.loads(path.read_text()))
            except (OSError, ValueError, TypeError) as exc:   # one damaged file must not stop the server
                log.warning("room file %s skipped: it cannot be read (%s)", path.name, exc)
                continue
            self.rooms[room.code] = room
        self._task = asyncio.create_task(self._tend())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()

    # ---- rooms ---------------------------------------------------------------------------
    def create(self) -> tuple[Room, str]:
        secret = secrets.token_urlsafe(24)
        while (code := "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))) in self.rooms:
            pass
        now = self._clock()
        room = Room(code=code, secret_digest=_digest(secret), created_at=now, active_at=now)
        self.rooms[code] = room
        self._save(room)
        return room, secret

    def get(self, code: str) -> Room | None:
        room = self.rooms.get(normalise_code(code))
        return None if room is None or self.expired(room) else room

    def expired(self, room: Room) -> bool:
        """Idle: nobody connected, and no change by the presenter for the TTL."""
        return self.connected(room) == 0 and self._clock() - room.active_at > self.ttl_s

    def connected(self, room: Room) -> int:
        return self.hub.count(self.topic(room))

    def is_presenter(self, room: Room, secret: str | None) -> bool:
        return secret is not None and hmac.compare_digest(_digest(secret), room.secret_digest)

    def control_refusal(self, run: Run, secret: str | None) -> Message | None:
        """Why this client may not step, pause, continue or cancel `run`, or None. A run a room's
        presenter started is controlled with that room's secret only, whoever else can see it."""
        if run.room is None:
            return None
        room = self.rooms.get(run.room)
        if room is not None and self.is_presenter(room, secret):
            return None
        return say("room.presenter_only_run", "run {run_id} is lecture room {room}'s: only its presenter controls it "
                   "(with the room's secret: ?secret=…)", run_id=run.id, room=run.room)

    def topic(self, room: Room) -> str:
        return f"room:{room.code}"

    def followers(self, room: Room) -> int:
        return self.connected(room) - self.presenters.get(room.code, 0)

    def state(self, room: Room) -> dict:
        return room.public(self.followers(room))

    # ---- the presenter's controls ----------------------------------------------------------
    def show_run(self, room: Room, run: Run) -> None:
        """The state naming the run tells each socket to follow that run's log, from its start."""
        room.run, room.cursor = run.id, 0
        self._changed(room)

    def seek(self, room: Room, seq) -> None:
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise RoomError(say("room.seek_needs_seq", "seek needs a non-negative integer seq"))
        run = self.runs.get(room.run) if room.run else None
        room.cursor = min(seq, len(run.events)) if run else 0
        self._changed(room)

    def step(self, room: Room, by: int = 1) -> None:
        self.seek(room, max(room.cursor + by, 0))

    def set_view(self, room: Room, view) -> None:
        if not isinstance(view, dict) or len(json.dumps(view)) > MAX_VIEW_BYTES:
            raise RoomError(say("room.view_too_large", "a view is a JSON object of at most {max_bytes} bytes",
                                max_bytes=MAX_VIEW_BYTES))
        room.view = view
        self._changed(room)

    def _changed(self, room: Room) -> None:
        room.active_at = self._clock()
        self._save(room)
        self.hub.publish(self.topic(room), json.dumps(self.state(room), separators=(",", ":")))

    def _save(self, room: Room) -> None:
        path = self.dir / f"{room.code}.json"
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(room)))
        tmp.replace(path)

    # ---- upkeep ---------------------------------------------------------------------------
    async def _tend(self) -> None:
        """Once a second: tell each room its follower count when it changed, keep rooms with
        anyone connected alive, delete expired ones."""
        while True:
            await asyncio.sleep(1)
            self.tend()

    def tend(self) -> None:
        """One round of the tending: follower counts, rooms in use kept alive, expired ones deleted."""
        for room in list(self.rooms.values()):
            self._count_followers(room)
            self._keep_alive(room)
            if self.expired(room):
                self._delete(room)

    def _count_followers(self, room: Room) -> None:
        count = self.followers(room)
        if self._counts.get(room.code, 0) != count:
            self._counts[room.code] = count
            self.hub.publish(self.topic(room), json.dumps({"type": "followers", "count": count}))

    def _keep_alive(self, room: Room) -> None:
        """A room in use is not idle; its last use is saved when the last socket leaves."""
        if self.connected(room):
            room.active_at = self._clock()
            self._occupied.add(room.code)
        elif room.code in self._occupied:
            self._occupied.discard(room.code)
            self._save(room)

    def _delete(self, room: Room) -> None:
        del self.rooms[room.code]
        self._counts.pop(room.code, None)
        self.presenters.pop(room.code, None)
        (self.dir / f"{room.code}.json").unlink(missing_ok=True)
