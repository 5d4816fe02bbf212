"""The hub: one bounded queue per subscriber; a subscriber that overflows is marked lagged, alone;
and the websocket sender resynchronises a lagged client from the log, every event exactly once."""

from __future__ import annotations

import asyncio

from app.hub import Hub
from app.log_follower import follow
from app.routes.ws import _send
from app.runs import RunManager
from app.settings import Settings
from tests.app.helpers import RecordingSocket, until


def test_each_subscriber_gets_every_message_in_its_own_queue():
    async def scenario():
        hub = Hub()
        async with hub.subscribe("run-a") as first, hub.subscribe("run-a") as second, \
                hub.subscribe("run-b") as other:
            assert hub.count("run-a") == 2 and hub.count("run-b") == 1
            for n in range(3):
                hub.publish("run-a", {"seq": n})
            hub.publish("nobody-listens", {"seq": 99})
            got = [[sub.queue.get_nowait() for _ in range(sub.queue.qsize())] for sub in (first, second, other)]
        published = [("run-a", {"seq": n}) for n in range(3)]
        assert got == [published, published, []]
        assert hub.count("run-a") == 0 and hub.count("run-b") == 0     # unsubscribed on exit

    asyncio.run(scenario())


def test_overflow_marks_only_the_slow_subscriber_lagged():
    async def scenario():
        hub = Hub(queue_size=3)
        async with hub.subscribe("run") as slow, hub.subscribe("run") as fast:
            for n in range(5):
                hub.publish("run", {"seq": n})
                if fast.queue.qsize():
                    fast.queue.get_nowait()
            assert slow.lagged and slow.queue.qsize() == 3
            assert not fast.lagged
            slow.drain()
            assert not slow.lagged and slow.queue.empty()

    asyncio.run(scenario())


def test_lagged_websocket_client_is_resynchronised_from_the_log(tmp_path):
    """Events published faster than a client takes them: it still gets seq 1..N, each once."""
    async def scenario():
        manager = RunManager(Settings(DATA_DIR=tmp_path), Hub(queue_size=4))
        manager.runs_dir.mkdir(parents=True)
        run = manager.create("tp_mlp", 1, {}, False, "gloo")           # records seq 1 (queued)
        socket = RecordingSocket()
        async with follow(manager, run.id, 0) as events:
            sender = asyncio.create_task(_send(socket, events))
            for n in range(40):                                        # a burst: the queue overflows
                manager.record(run, {"kind": "log", "message": f"event {n}"})
            assert events.subscriber.lagged
            await until(lambda: not events.subscriber.lagged)          # resynchronised and drained
            for n in range(5):                                         # then live again
                manager.record(run, {"kind": "log", "message": f"late {n}"})
                await asyncio.sleep(0.01)
            await until(lambda: len(socket.sent) >= 46)
            sender.cancel()
        return [e["seq"] for e in socket.sent]

    assert asyncio.run(scenario()) == list(range(1, 47))
