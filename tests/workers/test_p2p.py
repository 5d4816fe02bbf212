"""Point-to-point calls on two real gloo ranks (torch.multiprocessing, spawn): send/recv, isend/irecv
and batch_isend_irecv become `p2p` events with their peer, and the trace export links each send to
the recv that took it."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORLD = 2


def _site() -> str:
    frame = sys._getframe(1)
    return f"{Path(frame.f_code.co_filename).resolve().relative_to(REPO)}:{frame.f_lineno}"


ANY_SOURCE_TAG = 9


def _rank_program(rank: int, store_path: str, out_dir: str) -> None:
    """Runs in a spawned process: the scenario, traced, written to out_dir/rank<r>.json."""
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    import torch
    import torch.distributed as dist

    from workers import comm
    from tests.workers.helpers import on_the_wire
    from workers.tracer import Tracer

    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.FileStore(store_path, WORLD), rank=rank, world_size=WORLD,
                            timeout=timedelta(seconds=30))
    emitted: list[dict] = []
    t0 = time.monotonic()
    tracer = Tracer(lambda m: emitted.append(on_the_wire(m)), rank, lambda: time.monotonic() - t0)
    tracer.install()
    comm.use_tracer(tracer)
    peer = 1 - rank
    sites, received = {}, {}

    # 1. blocking send/recv with a tag
    if rank == 0:
        dist.send(torch.arange(4.0), dst=1, tag=3); sites["send"] = _site()  # noqa: E702
    else:
        buf = torch.zeros(4)
        dist.recv(buf, src=0, tag=3); sites["recv"] = _site()  # noqa: E702
        received["blocking"] = buf.tolist()
    # 2. a recv from any source learns its peer from the call
    if rank == 1:
        dist.send(torch.full((2,), 7.0), dst=0)
    else:
        buf = torch.zeros(2)
        received["any_source_from"] = dist.recv(buf)
        received["any_source"] = buf.tolist()
    # 2b. an irecv from any source learns its peer when it completes
    if rank == 1:
        dist.send(torch.full((2,), 8.0), dst=0, tag=ANY_SOURCE_TAG)
    else:
        buf = torch.zeros(2)
        dist.irecv(buf, tag=ANY_SOURCE_TAG).wait()
        received["async_any_source"] = buf.tolist()
    # 3. isend/irecv both ways at once
    mine, theirs = torch.full((3,), float(rank)), torch.zeros(3)
    works = [dist.isend(mine, dst=peer), dist.irecv(theirs, src=peer)]
    for work in works:
        work.wait()
    received["isend_irecv"] = theirs.tolist()
    # 4. batch_isend_irecv with P2POp, as a pipeline schedule does
    mine, theirs = torch.full((5,), 10.0 + rank), torch.zeros(5)
    ops = [dist.P2POp(dist.isend, mine, peer), dist.P2POp(dist.irecv, theirs, peer)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    received["batch"] = theirs.tolist()
    # 5. a collective across both ranks
    comm.all_reduce(torch.ones(2), label="sum across both")

    tracer.uninstall()
    dist.destroy_process_group()
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps({"events": [m for m in emitted if "blob" not in m], "sites": sites, "received": received}))
    # End as a paralab rank does, without the interpreter's teardown: gloo's threads, still owned by
    # the process group that the P2POps above keep alive, abort the process if destroyed at exit.
    os._exit(0)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> dict[int, dict]:
    import torch.multiprocessing as mp

    out = tmp_path_factory.mktemp("p2p")
    mp.start_processes(_rank_program, args=(str(out / "store"), str(out)), nprocs=WORLD, join=True,
                       start_method="spawn")
    return {r: json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD)}


def _events(result: dict) -> list[dict]:
    return [m for m in result["events"] if "blob" not in m]


def test_data_arrived(two_ranks):
    assert two_ranks[1]["received"]["blocking"] == [0, 1, 2, 3]
    assert two_ranks[0]["received"]["any_source"] == [7, 7]
    assert two_ranks[0]["received"]["isend_irecv"] == [1, 1, 1]
    assert two_ranks[1]["received"]["isend_irecv"] == [0, 0, 0]
    assert two_ranks[0]["received"]["batch"] == [11] * 5
    assert two_ranks[1]["received"]["batch"] == [10] * 5


def test_p2p_events_name_op_peer_tag_and_site(two_ranks):
    for rank, result in two_ranks.items():
        p2p = [e for e in _events(result) if e["kind"] == "p2p"]
        begins = [e for e in p2p if e["phase"] == "begin"]
        ends = [e for e in p2p if e["phase"] == "end"]
        expected_ops = (["send", "recv", "recv"] if rank == 0 else ["recv", "send", "send"]) + ["send", "recv"] * 2
        assert [e["op"] for e in begins] == expected_ops
        assert sorted(e["op"] for e in ends) == sorted(expected_ops)
        for event in begins:
            assert event["rank"] == rank
            assert event["group"] == "world" and event["ranks"] == [0, 1]
            assert event["dtype"] == "float32" and event["bytes"] == 4 * event["shape"][0]
            assert event["site"].startswith("tests/workers/test_p2p.py:")
            assert "cseq" not in event               # cseq counts collectives only
        for event in begins[2:] + ends:
            not_known_yet = event["op"] == "recv" and event["phase"] == "begin" and event["tag"] == ANY_SOURCE_TAG
            assert event["peer"] == (None if not_known_yet else 1 - rank)
    send0 = next(e for e in _events(two_ranks[0]) if e["kind"] == "p2p")
    recv1 = next(e for e in _events(two_ranks[1]) if e["kind"] == "p2p")
    assert (send0["op"], send0["peer"], send0["tag"], send0["site"]) == ("send", 1, 3, two_ranks[0]["sites"]["send"])
    assert (recv1["op"], recv1["peer"], recv1["tag"], recv1["site"]) == ("recv", 0, 3, two_ranks[1]["sites"]["recv"])


def test_any_source_recv_reports_its_peer(two_ranks):
    assert two_ranks[0]["received"]["any_source_from"] == 1
    recv = [e for e in _events(two_ranks[0]) if e["kind"] == "p2p" and e["op"] == "recv"][0]
    end = [e for e in _events(two_ranks[0]) if e["kind"] == "p2p" and e["op"] == "recv"][1]
    assert (recv["phase"], end["phase"]) == ("begin", "end")
    assert end["peer"] == 1


def test_an_async_recv_from_any_source_learns_its_peer_when_it_completes(two_ranks):
    assert two_ranks[0]["received"]["async_any_source"] == [8, 8]
    begin, end = [e for e in _events(two_ranks[0]) if e["kind"] == "p2p" and e.get("tag") == ANY_SOURCE_TAG]
    assert (begin["phase"], begin["peer"]) == ("begin", None)
    assert (end["phase"], end["peer"]) == ("end", 1)


def test_p2p_previews_carry_the_data(two_ranks):
    events = _events(two_ranks[0])
    send = next(e for e in events if e["kind"] == "p2p" and e["op"] == "send" and e["phase"] == "begin")
    assert send["tensors"][0]["preview"] == [[0, 1, 2, 3]]
    batch_recv_end = [e for e in events if e["kind"] == "p2p" and e["op"] == "recv" and e["phase"] == "end"][-1]
    assert batch_recv_end["tensors"][0]["preview"] == [[11] * 5]


def test_collective_between_p2p_counts_from_one(two_ranks):
    for rank, result in two_ranks.items():
        [begin, end] = [e for e in _events(result) if e["kind"] == "collective"]
        assert (begin["op"], begin["ranks"], begin["cseq"], begin["label"]) == ("all_reduce", [0, 1], 1, "sum across both")
        assert end["tensors"][0]["preview"] == [[2, 2]]


def test_trace_links_every_send_to_its_recv(two_ranks):
    from app.trace import chrome_trace

    events = sorted(_events(two_ranks[0]) + _events(two_ranks[1]), key=lambda e: e["t"])
    trace = chrome_trace("p2p", events)["traceEvents"]
    slices = [e for e in trace if e["ph"] == "X"]
    p2p_slices = [s for s in slices if s["cat"] == "p2p"]
    assert len(p2p_slices) == 14                    # 7 sends and 7 recvs over both ranks
    assert all(s["tid"] == 3 for s in p2p_slices)
    starts = {e["id"]: e for e in trace if e["ph"] == "s"}
    finishes = {e["id"]: e for e in trace if e["ph"] == "f"}
    assert len(starts) == 7 and starts.keys() == finishes.keys()
    for flow_id, start in starts.items():
        finish = finishes[flow_id]
        assert {start["pid"], finish["pid"]} == {0, 1}
        sender = next(s for s in p2p_slices if s["pid"] == start["pid"] and s["ts"] == start["ts"])
        assert sender["name"].startswith("send")
        assert sender["args"]["peer"] == finish["pid"]
