"""The log follower: one reader's view of a run's event log — the recorded events after `since`,
then the live ones as they are recorded, each exactly once and in `seq` order. Both the run socket
(app/routes/ws.py) and the room socket (app/routes/rooms.py) send what it yields:

    async with follow(runs, run_id, since) as events:
        async for topic, event in events:
            await websocket.send_text(event_text(event))

How each event comes exactly once, and nobody waits for a slow reader:
- The reader listens to the run's hub topic, then notes where the log ends, with no await in
  between: it reads the log up to there, one event at a time, and everything recorded after comes
  through its queue. `last`, the seq of the last event yielded, drops what is in both. A reader
  holds no copy of the log: its memory is its bounded queue (app/hub.py).
- When a reader's queue overflows (it is `lagged`), the queue is emptied and the reader reads on
  from the log after `last`, to where the log ends now. `resync` says what to yield first in place of the other topics'
  messages that were dropped with it (a room: its state as it is now); it may switch runs.
- A reader may listen to other topics on the same queue (a room's state messages): their messages
  pass through unchanged, in the order published, as `(topic, message)`. `follow` switches to another
  run's log between two messages (a room that shows another run); what the previous run's topic had
  queued is dropped.

For several server processes the hub becomes Redis pub/sub behind the same `follow`; the log is
read from the RunManager as now.
"""

from __future__ import annotations

import json
from collections import OrderedDict, deque
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable, Iterable

from app.hub import Subscriber
from app.runs import Run, RunManager

__all__ = ["LogFollower", "TextCache", "follow", "event_text"]

Resync = Callable[["LogFollower"], Iterable[tuple[str, Any]]]   # what to yield first after a lag


class LogFollower:
    """Yields `(run_id, event)` for the followed run's events and `(topic, message)` for the other
    topics' messages, in order; see the module's docstring for the guarantees."""

    def __init__(self, runs: RunManager, subscriber: Subscriber, resync: Resync | None = None):
        self._runs, self.subscriber = runs, subscriber
        self._resync = resync or (lambda follower: ())
        self.run_id: str | None = None
        self._run: Run | None = None
        self._last = 0                       # the seq of the last event of `run_id` yielded
        self._read_to = 0                    # read the log up to this seq; the queue has what comes after
        self._resynced: deque[tuple[str, Any]] = deque()    # what `resync` gave, still to yield

    def follow(self, run_id: str | None, since: int = 0) -> None:
        """From now on, `run_id`'s events after `since` (None: no run's). Listening starts before
        the log is read, with no await in between: nothing recorded meanwhile falls through."""
        if self.run_id is not None:
            self._runs.hub.unlisten(self.subscriber, self.run_id)
        self.run_id, self._last = run_id, max(since, 0)
        self._run = self._runs.get(run_id) if run_id is not None else None
        if self._run is not None:
            self._runs.hub.listen(self.subscriber, run_id)
        self._read_log()

    def __aiter__(self) -> LogFollower:
        return self

    async def __anext__(self) -> tuple[str, Any]:
        """The next message; a cancelled wait for it loses nothing."""
        subscriber = self.subscriber
        while True:
            if self._resynced:
                return self._resynced.popleft()
            if self._last < self._read_to:
                event = self._run.events[self._last]     # seq N sits at index N-1
                self._last = event["seq"]
                return self.run_id, event
            topic, message = await subscriber.queue.get()
            if subscriber.lagged:              # too far behind: the log has what was dropped
                subscriber.drain()
                self._read_log()
                self._resynced.extend(self._resync(self))
            elif topic == self.run_id:
                if message["seq"] > self._last:    # else read from the log already
                    self._last = message["seq"]
                    return topic, message
            elif topic in subscriber.topics:   # another topic it listens to, not a run it followed before
                return topic, message

    def _read_log(self) -> None:
        """Read on from the log, to its end as it is now: the queue has every event recorded after
        (the reader listens already), to be yielded once the log is read."""
        self._read_to = len(self._run.events) if self._run is not None else 0


@asynccontextmanager
async def follow(runs: RunManager, run_id: str | None, since: int = 0, *, topics: Iterable[str] = (),
                 resync: Resync | None = None) -> AsyncIterator[LogFollower]:
    """A reader of `run_id`'s log from after `since`, with its own queue on the hub, which also
    listens to `topics`; it stops listening when the block ends."""
    async with runs.hub.subscribe(*topics) as subscriber:
        follower = LogFollower(runs, subscriber, resync)
        follower.follow(run_id, since)
        yield follower


class TextCache:
    """The texts of the last `size` objects encoded, by identity: the readers that send an event close
    together (a room of hundreds) encode it once and share the text. An object is held while its
    text is kept, so that its id is not reused meanwhile."""

    def __init__(self, size: int = 256):
        self._size = size
        self._texts: OrderedDict[int, tuple[object, str]] = OrderedDict()

    def text(self, obj: object, encode: Callable[[Any], str]) -> str:
        kept = self._texts.get(id(obj))
        if kept is not None and kept[0] is obj:
            return kept[1]
        text = encode(obj)
        self._texts[id(obj)] = (obj, text)
        if len(self._texts) > self._size:
            self._texts.popitem(last=False)
        return text


_EVENT_TEXTS = TextCache()


def event_text(event: dict) -> str:
    """The event as compact JSON, encoded once for all the readers that send it close together."""
    return _EVENT_TEXTS.text(event, _compact_json)


def _compact_json(event: dict) -> str:
    return json.dumps(event, separators=(",", ":"))
