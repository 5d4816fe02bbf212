"""A traced call's end — previews, blobs and event — made on the channel's thread (`Tracer(later=...)`,
as every rank does): the same messages as when made at the call, in the same order, from the
tensors as they were at the call's end; a begin is written before its call starts."""

from __future__ import annotations

import threading
import time

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from tests.workers.helpers import on_the_wire
from tests.workers.test_channel import Listener
from workers import channel as channels
from workers import preview as previews
from workers.channel import EventChannel
from workers.tracer import Tracer

VARYING = ("t", "t_call", "duration", "algbw", "busbw")   # timings: differ from one run to the next


def program():
    """Traced calls of every kind the tracer defers or not, each tensor changed right after its call."""
    x = torch.randn(64, 1024)                   # 64 Ki values: a blob
    dist.all_reduce(x)
    x.fill_(7.0)
    large = torch.randn(300, 256)               # over 64 Ki values: previews, no blob
    out = torch.empty(300, 256)
    dist.all_gather_into_tensor(out, large, async_op=True).wait()
    large.fill_(-1.0)
    out.fill_(-2.0)
    huge = torch.randn(1100, 1024)              # over MAX_COPIED_VALUES: made at the call
    dist.all_reduce(huge)
    small = torch.arange(6.0).reshape(2, 3)
    reduced = funcol.wait_tensor(funcol.all_reduce(small, "sum", dist.group.WORLD))
    small.fill_(0.0)
    reduced.fill_(0.0)


def traced_messages(tracer_of) -> list[dict]:
    """What a tracer made by `tracer_of(emit)` sends while `program` runs."""
    torch.manual_seed(0)
    sent: list[dict] = []
    tracer = tracer_of(sent)
    tracer.install()
    try:
        program()
    finally:
        tracer.uninstall()
    return sent


def comparable(messages: list[dict]) -> list[dict]:
    return [{k: (bytes(v) if k == "data" else v) for k, v in m.items() if k not in VARYING} for m in messages]


def through_channel(listener: Listener, **tracer_fields) -> list[dict]:
    channel = EventChannel(listener.address, "run1", "token", 0)
    traced_messages(lambda sent: Tracer(channel.send, 0, time.monotonic, later=channel.later, **tracer_fields))
    channel.close()
    return listener.until_closed()[1:]


def test_the_messages_made_later_are_those_made_at_the_call(world):
    at_call = comparable(traced_messages(lambda sent: Tracer(lambda m: sent.append(on_the_wire(m)), 0, time.monotonic)))
    later = comparable(through_channel(Listener()))
    events = [m for m in later if "blob" not in m]
    assert events == [m for m in at_call if "blob" not in m]       # in order, previews included
    assert sorted(m["blob"] for m in later if "blob" in m) == sorted(m["blob"] for m in at_call if "blob" in m)
    assert {m["blob"]: m for m in later if "blob" in m} == {m["blob"]: m for m in at_call if "blob" in m}
    [end] = [e for e in events if e["phase"] == "end" and e["shape"] == [64, 1024]]
    assert end["tensors"][0]["stats"]["max"] != 7.0                  # the values at the call, not after
    assert len([e for e in events if e["kind"] == "collective"]) == 8


def test_an_event_sent_while_a_call_is_still_being_made_waits_for_it(world):
    listener = Listener()
    channel = EventChannel(listener.address, "run1", "token", 0)
    release = threading.Event()

    def slow_job():
        release.wait(10)
        return [{"kind": "log", "rank": 0, "t": 1.0, "message": "the call"}]
    assert channel.later(slow_job)
    threading.Timer(0.2, release.set).start()
    channel.send({"kind": "log", "rank": 0, "t": 2.0, "message": "after it"})
    assert release.is_set()                         # send returned once the job before it was written
    channel.send({"kind": "log", "rank": 0, "t": 3.0, "message": "last"})
    channel.close()
    assert [m["message"] for m in listener.until_closed()[1:]] == ["the call", "after it", "last"]


def test_a_rank_outrunning_its_channel_makes_its_messages_itself_in_order(world, monkeypatch):
    monkeypatch.setattr(channels, "MAX_QUEUED_BYTES", 1)      # every job but one waiting: made at the call
    later = comparable(through_channel(Listener()))
    at_call = comparable(traced_messages(lambda sent: Tracer(lambda m: sent.append(on_the_wire(m)), 0, time.monotonic)))
    assert [m for m in later if "blob" not in m] == [m for m in at_call if "blob" not in m]


def test_a_begin_is_written_before_its_call_starts_and_the_end_while_the_program_goes_on(world, monkeypatch):
    """A rank that gloo aborts inside a collective, or that dies right after one, has said which."""
    listener = Listener()
    channel = EventChannel(listener.address, "run1", "token", 0)
    release = threading.Event()
    made = previews.preview_of
    monkeypatch.setattr(previews, "preview_of", lambda *a, **k: (release.wait(10), made(*a, **k))[1])
    tracer = Tracer(channel.send, 0, time.monotonic, later=channel.later)
    tracer.install()
    try:
        dist.all_reduce(torch.ones(4))
        assert not release.is_set()                  # returned while its end's preview could not be made
        deadline = time.monotonic() + 10
        while not any("kind" in m for m in listener.lines) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        assert [m["phase"] for m in listener.lines[1:] if "kind" in m] == ["begin"]
        release.set()
        dist.all_reduce(torch.ones(4))
    finally:
        release.set()
        tracer.uninstall()
        channel.close()
    assert [m["phase"] for m in listener.until_closed()[1:] if "kind" in m] == ["begin", "end"] * 2


def test_a_job_that_fails_loses_its_own_messages_only_and_a_closed_channel_takes_no_job(capfd):
    listener = Listener()
    channel = EventChannel(listener.address, "run1", "token", 0)
    assert channel.later(lambda: 1 / 0)
    assert channel.later(lambda: [][1])
    channel.later(lambda: [{"kind": "log", "rank": 0, "t": 1.0, "message": "next"}])
    channel.send({"kind": "log", "rank": 0, "t": 2.0, "message": "after"})
    channel.close()
    assert not channel.later(lambda: [])            # the tracer then makes its messages at the call
    assert [m["message"] for m in listener.until_closed()[1:]] == ["next", "after"]
    said = capfd.readouterr().err     # the rank's output panel says the first loss, once
    assert said.count("could not be made and is missing from the log") == 1
    assert "ZeroDivisionError" in said and "IndexError" not in said
