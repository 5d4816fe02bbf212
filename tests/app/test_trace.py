"""Chrome trace export: one pid per rank named by metadata events, lanes as tids, X slices in
microseconds, flow arrows from each send to the recv that took it."""

from __future__ import annotations

import json

import pytest

from app.trace import chrome_trace


def span(rank, kind, t0, t1, **fields):
    base = {"rank": rank, "kind": kind, **fields}
    return [{**base, "phase": "begin", "t": t0}, {**base, "phase": "end", "t": t1}]


def by_phase(trace, ph):
    return [e for e in trace["traceEvents"] if e["ph"] == ph]


def test_metadata_names_a_process_per_rank_and_its_lanes():
    events = [{"seq": 1, "rank": None, "t": 0, "kind": "run", "status": "running"},
              *span(1, "compute", 0.1, 0.2, name="F"), *span(0, "compute", 0.1, 0.2, name="F")]
    trace = chrome_trace("r1", events)
    json.dumps(trace, allow_nan=False)
    names = {(e["pid"], e["name"], e["tid"]): e["args"] for e in by_phase(trace, "M")}
    assert names[(0, "process_name", 0)] == {"name": "rank 0"}
    assert names[(1, "process_name", 0)] == {"name": "rank 1"}
    assert names[(1, "process_sort_index", 0)] == {"sort_index": 1}
    assert {args["name"] for (pid, name, tid), args in names.items() if pid == 0 and name == "thread_name"} == \
        {"compute", "collectives", "send/recv"}
    assert {e["pid"] for e in by_phase(trace, "M")} == {0, 1}        # the server's own events are no process
    assert trace["otherData"]["run"] == "r1"


def test_slices_have_lane_time_duration_and_arguments():
    events = [*span(0, "collective", 0.5, 0.75, op="all_reduce", group="tp", ranks=[0, 1], cseq=3,
                    shape=[8, 16], dtype="float32", bytes=512, label="g", site="x.py:3"),
              *span(0, "compute", 1.0, 1.0, name="F", microbatch=2, stage=0)]
    coll, comp = by_phase(chrome_trace("r", events), "X")
    assert coll == {**coll, "name": "all_reduce (tp)", "cat": "collective", "pid": 0, "tid": 2,
                    "ts": 500_000.0, "dur": 250_000.0}
    assert coll["args"] == {"group": "tp", "ranks": [0, 1], "cseq": 3, "shape": [8, 16], "dtype": "float32",
                            "bytes": 512, "label": "g", "site": "x.py:3"}
    assert (comp["name"], comp["tid"], comp["args"]) == ("F2", 1, {"stage": 0, "microbatch": 2})
    assert comp["dur"] > 0                                             # zero-length spans stay visible


def test_nested_and_interleaved_spans_pair_in_order():
    events = [
        {"rank": 0, "kind": "compute", "name": "backward", "phase": "begin", "t": 1.0},
        *span(0, "collective", 1.1, 1.2, op="all_reduce", group="tp"),
        {"rank": 0, "kind": "compute", "name": "backward", "phase": "end", "t": 2.0},
        {"rank": 0, "kind": "collective", "op": "barrier", "phase": "end", "t": 3.0},   # no begin: ignored
    ]
    slices = by_phase(chrome_trace("r", events), "X")
    assert [(s["name"], s["ts"], s["dur"]) for s in slices] == [
        ("all_reduce (tp)", 1.1e6, pytest.approx(0.1e6)), ("backward", 1.0e6, 1.0e6)]


def test_flow_arrows_join_sends_and_recvs_by_peer_and_tag():
    events = [
        *span(0, "p2p", 0.0, 0.1, op="send", peer=1, tag=0),
        *span(0, "p2p", 0.2, 0.3, op="send", peer=1, tag=0),
        *span(0, "p2p", 0.2, 0.3, op="send", peer=2, tag=5),
        *span(1, "p2p", 0.0, 0.15, op="recv", peer=0, tag=0),
        *span(1, "p2p", 0.2, 0.35, op="recv", peer=0, tag=0),
        *span(2, "p2p", 0.1, 0.4, op="recv", peer=0, tag=5),
        *span(2, "p2p", 0.5, 0.6, op="recv", peer=1, tag=0),               # never sent: no arrow
    ]
    trace = chrome_trace("r", events)
    starts, finishes = by_phase(trace, "s"), by_phase(trace, "f")
    assert len(starts) == len(finishes) == 3
    assert len({s["id"] for s in starts}) == 3
    arrows = {s["id"]: (s["pid"], s["ts"]) for s in starts}
    landed = {f["id"]: (f["pid"], f["ts"], f["bp"], f["tid"]) for f in finishes}
    pairs = sorted((arrows[i], landed[i]) for i in arrows)
    assert pairs == [
        ((0, 0.0), (1, 0.15e6, "e", 3)),                                   # first send to 1 → first recv on 1
        ((0, 0.2e6), (1, pytest.approx(0.35e6), "e", 3)),
        ((0, 0.2e6), (2, pytest.approx(0.4e6), "e", 3)),
    ]
    assert sorted(s["name"] for s in by_phase(trace, "X"))[:3] == ["recv ← 0", "recv ← 0", "recv ← 0"]


def test_recv_from_any_source_gets_its_slice_and_arrow():
    """`dist.recv(t)` without `src` begins with peer None; its end names the sender."""
    events = [
        *span(1, "p2p", 0.0, 0.1, op="send", peer=0, tag=0),
        {"rank": 0, "kind": "p2p", "op": "recv", "peer": None, "tag": 0, "phase": "begin", "t": 0.0},
        {"rank": 0, "kind": "p2p", "op": "recv", "peer": 1, "tag": 0, "phase": "end", "t": 0.2},
    ]
    trace = chrome_trace("r", events)
    recv = next(s for s in by_phase(trace, "X") if s["pid"] == 0)
    assert (recv["name"], recv["args"]["peer"]) == ("recv ← 1", 1)
    [start], [finish] = by_phase(trace, "s"), by_phase(trace, "f")
    assert (start["pid"], finish["pid"], start["id"]) == (1, 0, finish["id"])
