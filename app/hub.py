"""Fan-out of live messages: one bounded queue per subscriber, broadcaster-style.

A subscriber listens to any number of topics through its one queue, which holds `(topic, message)`
pairs in the order they were published. A slow client fills only its own queue. When it overflows,
the subscriber is marked `lagged` and its reader resynchronises from the recorded log instead of
anyone waiting for it (app/log_follower.py). Kept behind this small interface so that a pub/sub
(Redis through broadcaster) can feed several server processes.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from contextlib import asynccontextmanager
from typing import AsyncIterator


class Subscriber:
    def __init__(self, maxsize: int):
        self.queue: asyncio.Queue = asyncio.Queue(maxsize)
        self.topics: set[str] = set()
        self.lagged = False

    def offer(self, topic: str, message) -> None:
        try:
            self.queue.put_nowait((topic, message))
        except asyncio.QueueFull:
            self.lagged = True

    def drain(self) -> None:
        while not self.queue.empty():
            self.queue.get_nowait()
        self.lagged = False


class Hub:
    def __init__(self, queue_size: int = 10_000):
        self._queue_size = queue_size
        self._topics: dict[str, set[Subscriber]] = defaultdict(set)

    @asynccontextmanager
    async def subscribe(self, *topics: str) -> AsyncIterator[Subscriber]:
        subscriber = Subscriber(self._queue_size)
        for topic in topics:
            self.listen(subscriber, topic)
        try:
            yield subscriber
        finally:
            for topic in list(subscriber.topics):
                self.unlisten(subscriber, topic)

    def listen(self, subscriber: Subscriber, topic: str) -> None:
        """From now on, `topic`'s messages go to `subscriber`'s queue too."""
        self._topics[topic].add(subscriber)
        subscriber.topics.add(topic)

    def unlisten(self, subscriber: Subscriber, topic: str) -> None:
        """No more of `topic`'s messages; those already queued stay there."""
        subscriber.topics.discard(topic)
        listeners = self._topics.get(topic)
        if listeners is not None:
            listeners.discard(subscriber)
            if not listeners:
                del self._topics[topic]

    def publish(self, topic: str, message) -> None:
        for subscriber in self._topics.get(topic, ()):
            subscriber.offer(topic, message)

    def count(self, topic: str) -> int:
        return len(self._topics.get(topic, ()))
