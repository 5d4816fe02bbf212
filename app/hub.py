"""Fan-out of live events: one bounded queue per subscriber, broadcaster-style.

A slow client fills only its own queue. When it overflows, the subscriber is marked `lagged` and
its sender resynchronises from the recorded log instead of anyone waiting for it. Kept behind this
small interface so that a pub/sub (Redis through broadcaster) can feed several server processes.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from contextlib import asynccontextmanager
from typing import AsyncIterator


class Subscriber:
    def __init__(self, maxsize: int):
        self.queue: asyncio.Queue = asyncio.Queue(maxsize)
        self.lagged = False

    def offer(self, message) -> None:
        try:
            self.queue.put_nowait(message)
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
    async def subscribe(self, topic: str) -> AsyncIterator[Subscriber]:
        subscriber = Subscriber(self._queue_size)
        self._topics[topic].add(subscriber)
        try:
            yield subscriber
        finally:
            self._topics[topic].discard(subscriber)
            if not self._topics[topic]:
                del self._topics[topic]

    def publish(self, topic: str, message) -> None:
        for subscriber in self._topics.get(topic, ()):
            subscriber.offer(message)

    def count(self, topic: str) -> int:
        return len(self._topics.get(topic, ()))
