"""A judged run's events, kept so that the learner can step through it afterwards.

Inside the sandbox each rank keeps the protocol events its tracer made (`EventKeeper`, bounded so
that its report stays far below the report's limit); the judge, outside, takes them from the
reports (`merged`) and trusts none of them: each is checked against the protocol, its rank is the
rank whose pipe it came by, and the whole run is put in time order (the ranks share one clock,
taken by the runner before it forks them).
"""

from __future__ import annotations

import json

from workers.protocol import problem

MAX_EVENTS = 1500                  # per rank
MAX_BYTES = 192 * 1024             # per rank, of the report's 1 MiB
TENSORS_BYTES = 128 * 1024         # past this, events are kept without their tensor previews
SUBMISSION = "/job/submission.py"  # the learner's file, inside the sandbox
SHOWN_AS = "submission.py"         # … as the recorded run names it (the `script` lesson's file name)


class EventKeeper:
    """One rank's events (not tensor blobs), as they come, while they fit."""

    def __init__(self):
        self.events: list[dict] = []
        self.size = 0

    def add(self, message: dict) -> None:
        if "blob" in message or len(self.events) >= MAX_EVENTS:
            return
        if self.size > TENSORS_BYTES and message.get("tensors"):
            message = {**message, "tensors": []}
        size = len(json.dumps(message, default=str))
        if self.size + size > MAX_BYTES:
            return
        self.events.append(message)
        self.size += size


def merged(events_per_rank: list[list | None]) -> list[dict]:
    """Every rank's well-formed events in time order (a rank's own order kept among equal times),
    the clock's zero moved to the first of them (the ranks' torch import is no part of the run),
    sites in the learner's file named as the recorded run names it."""
    kept = []
    for rank, events in enumerate(events_per_rank):
        for event in events[:MAX_EVENTS] if isinstance(events, list) else []:     # a forged flood: no more than a rank keeps
            if not isinstance(event, dict) or event.get("rank") != rank or problem(event) is not None:
                continue
            site = event.get("site")
            if isinstance(site, str) and site.startswith(SUBMISSION + ":"):
                event = {**event, "site": SHOWN_AS + site[len(SUBMISSION):]}
            kept.append(event)
    kept.sort(key=lambda event: event["t"])
    zero = kept[0]["t"] if kept else 0.0
    return [{**event, **{key: round(event[key] - zero, 6) for key in ("t", "t_call") if isinstance(event.get(key), (int, float))}}
            for event in kept]
