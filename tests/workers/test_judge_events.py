"""A judged run's events: each rank keeps its own within bounds, and the judge keeps only well-formed
ones that the rank could have sent, in time order from the first, sites in the learner's file named
as the recorded run names it."""

from __future__ import annotations

from workers.judge_events import MAX_BYTES, MAX_EVENTS, EventKeeper, merged
from workers.protocol import Collective


def collective(rank: int, t: float, phase: str = "begin", site: str = "/job/submission.py:7", **extra) -> dict:
    return Collective(rank=rank, t=t, phase=phase, op="all_reduce", group="world", ranks=[0, 1], cseq=1, shape=[4],
                      dtype="float32", bytes=16, wire_bytes=16, site=site, **extra).to_dict()


def test_the_judge_keeps_what_each_rank_could_have_sent_in_time_order():
    forged_rank = collective(1, 12.2)                      # came by rank 0's pipe, claims rank 1
    malformed = {**collective(0, 12.3), "bytes": "many"}
    with_seq = {**collective(0, 12.4), "seq": 1}
    rank0 = [collective(0, 12.0), forged_rank, malformed, with_seq, collective(0, 12.5, "end"), "not an event"]
    rank1 = [collective(1, 12.1), collective(1, 12.45, "end", site="workers/problems/x/harness.py:3")]
    got = merged([rank0, rank1, {"events": "no list"}])
    assert len(merged([[collective(0, float(i)) for i in range(MAX_EVENTS + 5)]])) == MAX_EVENTS
    assert [(e["rank"], e["phase"]) for e in got] == [(0, "begin"), (1, "begin"), (1, "end"), (0, "end")]
    assert [e["t"] for e in got] == [0.0, 0.1, 0.45, 0.5]                  # from the first event
    assert [e["site"] for e in got] == ["submission.py:7", "submission.py:7",
                                        "workers/problems/x/harness.py:3", "submission.py:7"]


def test_a_rank_keeps_its_events_within_bounds_and_drops_previews_first():
    keeper = EventKeeper()
    preview = {"name": "x", "shape": [32, 32], "dtype": "float32", "preview": [[1.0] * 32] * 32}
    keeper.add({"blob": "t1", "shape": [4], "dtype": "float32", "data": ""})     # a full tensor: never kept
    assert keeper.events == []
    for i in range(MAX_EVENTS * 2):
        keeper.add(collective(0, float(i), tensors=[preview]))
    assert 0 < len(keeper.events) <= MAX_EVENTS
    assert keeper.size <= MAX_BYTES
    assert keeper.events[0]["tensors"] and not keeper.events[-1]["tensors"]
