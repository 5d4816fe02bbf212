"""The log follower, with no server: a run's recorded events, then live ones, each exactly once — also
for events recorded while the backlog is read, and for a reader whose bounded queue overflows; other
topics' messages passing through in order; and switching runs as a room does."""

from __future__ import annotations

import asyncio
import json

import pytest

from app.hub import Hub
from app.log_follower import LogFollower, event_text, follow
from app.rooms import event_message
from app.runs import RunManager
from app.settings import Settings


@pytest.fixture
def manager(tmp_path):
    def make(queue_size: int = 10_000) -> RunManager:
        runs = RunManager(Settings(DATA_DIR=tmp_path), Hub(queue_size=queue_size))
        runs.runs_dir.mkdir(parents=True, exist_ok=True)
        return runs
    return make


def new_run(runs: RunManager, events: int = 0):
    run = runs.create("tp_mlp", 1, {}, False, "gloo")                  # records seq 1 (queued)
    record(runs, run, events)
    return run


def record(runs: RunManager, run, count: int, label: str = "event") -> None:
    for n in range(count):
        runs.record(run, {"kind": "log", "message": f"{label} {n}"})


async def take(events: LogFollower, count: int) -> list[tuple[str, object]]:
    return [await asyncio.wait_for(anext(events), 2) for _ in range(count)]


async def nothing_more(events: LogFollower) -> bool:
    try:
        await asyncio.wait_for(anext(events), 0.05)
    except TimeoutError:
        return True
    return False


def seqs(items) -> list[int]:
    return [message["seq"] for _, message in items]


def test_the_recorded_events_after_since_then_live_ones(manager):
    async def scenario():
        runs = manager()
        run = new_run(runs, 4)                                          # seq 1..5
        async with follow(runs, run.id, 0) as whole, follow(runs, run.id, 3) as resumed, \
                follow(runs, run.id, 99) as ahead:
            assert seqs(await take(whole, 5)) == [1, 2, 3, 4, 5]
            assert seqs(await take(resumed, 2)) == [4, 5]
            assert await nothing_more(whole) and await nothing_more(ahead)
            record(runs, run, 2, "live")
            assert await take(whole, 2) == await take(resumed, 2) == [(run.id, e) for e in run.events[5:7]]
            assert await nothing_more(ahead)                            # past the end: waits for seq 100
        assert runs.hub.count(run.id) == 0                              # unsubscribed when the block ends

    asyncio.run(scenario())


def test_events_recorded_while_the_backlog_is_read_come_once(manager):
    """Each event taken from the backlog records another one: the log grows under the reader, and the
    same events are queued for it too. It gets 1..60, each once, in order."""
    async def scenario():
        runs = manager()
        run = new_run(runs, 29)                                         # seq 1..30
        got = []
        async with follow(runs, run.id, 0) as events:
            async for _, event in events:
                got.append(event["seq"])
                if len(run.events) < 60:
                    record(runs, run, 1, "during")
                    await asyncio.sleep(0)
                if event["seq"] == 60:
                    break
            assert await nothing_more(events)
        return got

    assert asyncio.run(scenario()) == list(range(1, 61))


def test_a_lagging_reader_is_resynchronised_from_the_log_alone(manager):
    """A queue of 4: a burst of 50 events overflows the reader that is busy, which then gets the
    resync's messages and every event from the log once; a reader that keeps up is never lagged."""
    async def scenario():
        runs = manager(queue_size=4)
        run = new_run(runs, 2)
        resyncs = []

        def resync(follower):
            resyncs.append(follower.run_id)
            return [("note", "resynchronised")]

        async with follow(runs, run.id, 0, resync=resync) as slow, follow(runs, run.id, 0) as quick:
            assert seqs(await take(slow, 3)) == [1, 2, 3]
            kept_up = []
            for n in range(50):
                record(runs, run, 1, "burst")
                kept_up += await take(quick, 4 if n == 0 else 1)        # the first time, its backlog too
                assert not quick.subscriber.lagged
            assert slow.subscriber.lagged and slow.subscriber.queue.qsize() == 4
            got = await take(slow, 51)
            assert got[0] == ("note", "resynchronised") and resyncs == [run.id]
            assert seqs(got[1:]) == list(range(4, 54)) and seqs(kept_up) == list(range(1, 54))
            assert not slow.subscriber.lagged
            record(runs, run, 1, "live")                                # then live again, from the queue
            assert seqs(await take(slow, 1)) == [54]
            assert await nothing_more(slow)

    asyncio.run(scenario())


def test_a_reader_that_never_reads_holds_no_more_than_its_queue(manager):
    """1,000 events recorded while a reader does not read: its queue holds 8 (the rest stay in the
    shared log, not copied for it); when it reads again it gets all 1,001 once."""
    async def scenario():
        runs = manager(queue_size=8)
        run = new_run(runs)
        async with follow(runs, run.id, 0) as events:
            sizes = []
            for _ in range(1000):
                record(runs, run, 1)
                sizes.append(events.subscriber.queue.qsize())
            assert max(sizes) == 8
            assert seqs(await take(events, 1001)) == list(range(1, 1002))
            assert await nothing_more(events)

    asyncio.run(scenario())


def test_other_topics_pass_through_in_order_and_a_switch_drops_the_old_runs_queue(manager):
    """As a room's socket uses it: the room's topic beside the run; a switch to B gives B's whole log
    and nothing more of A, even what A had queued; back to A gives A's whole log again."""
    async def scenario():
        runs = manager()
        a, b = new_run(runs, 2), new_run(runs, 1)                       # A: 1..3, B: 1..2
        async with follow(runs, a.id, 0, topics=["room"]) as events:
            assert seqs(await take(events, 3)) == [1, 2, 3]
            runs.hub.publish("room", "state: B")
            record(runs, a, 2, "after")                                 # queued for the reader, after the state
            topic, message = await anext(events)
            assert (topic, message) == ("room", "state: B")
            events.follow(b.id)
            runs.hub.publish("room", "cursor 1")
            record(runs, b, 1)
            got = await take(events, 4)
            assert got == [(b.id, b.events[0]), (b.id, b.events[1]), ("room", "cursor 1"), (b.id, b.events[2])]
            record(runs, a, 1, "unseen")                                # A is not followed any more
            assert await nothing_more(events)
            events.follow(a.id)
            assert [t for t, _ in await take(events, 6)] == [a.id] * 6 and await nothing_more(events)
            events.follow(None)
            runs.hub.publish("room", "no run")
            assert await take(events, 1) == [("room", "no run")]
        assert runs.hub.count("room") == runs.hub.count(a.id) == runs.hub.count(b.id) == 0

    asyncio.run(scenario())


def test_a_resync_that_switches_runs_gives_the_new_runs_whole_log_and_nothing_more_of_the_old(manager):
    """As a room's socket that lagged while the presenter showed another run: the resync's state
    first, then B's log from its start; A's burst, dropped with the queue, is not read from A's log."""
    async def scenario():
        runs = manager(queue_size=4)
        a, b = new_run(runs, 1), new_run(runs, 2)                       # A: 1..2, B: 1..3

        def resync(follower):
            follower.follow(b.id)
            return [("room", "state: B")]

        async with follow(runs, a.id, 0, topics=["room"], resync=resync) as events:
            assert seqs(await take(events, 2)) == [1, 2]
            record(runs, a, 20, "burst")                                # A's queue overflows
            got = await take(events, 4)
            assert got[0] == ("room", "state: B")
            assert got[1:] == [(b.id, event) for event in b.events]
            record(runs, a, 1, "unseen")
            assert await nothing_more(events)

    asyncio.run(scenario())


def test_the_wire_texts_are_the_events_compact_json():
    event = {"seq": 3, "rank": 0, "t": 0.5, "kind": "log", "message": "all-reduce ∑ “done”"}
    assert event_text(event) == json.dumps(event, separators=(",", ":"))
    assert event_text(event) is event_text(event)                       # encoded once
    assert event_message("0123456789ab", event) == json.dumps(
        {"type": "event", "run": "0123456789ab", "event": event}, separators=(",", ":"))
    assert event_message("0123456789ab", event) is event_message("0123456789ab", event)
