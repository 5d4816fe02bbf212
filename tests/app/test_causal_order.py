"""The order a learner steps through is causal: no collective ends before the members it takes data
from have begun it, no receive ends before its send began, each rank's events in their own order —
checked on every lesson's real log, and on hand-made arrival orders."""

from __future__ import annotations

from collections import Counter

import pytest

from app.causal import CausalOrder, _needed_members


def violations(events: list[dict]) -> list[str]:
    """Each place the log breaks causality, in words."""
    found, begun, sends, recvs, last_t = [], {}, Counter(), Counter(), {}
    for e in events:
        kind, phase, rank = e.get("kind"), e.get("phase"), e.get("rank")
        if rank is not None and e.get("t") is not None:   # a rank's own clock never runs backwards
            if e["t"] < last_t.get(rank, float("-inf")):
                found.append(f"seq {e['seq']}: rank {rank}'s event comes after a later one of its own")
            last_t[rank] = e["t"]
        if kind == "collective":
            key = (e.get("group"), tuple(e.get("ranks") or ()), e.get("cseq"))
            if phase == "begin":
                begun.setdefault(key, set()).add(rank)
            elif "error" not in e:
                absent = [m for m in _needed_members(e) if m not in begun.get(key, set())]
                if absent:
                    found.append(f"seq {e['seq']}: rank {rank}'s {e['op']} #{e.get('cseq')} ends before "
                                 f"ranks {absent} began it")
        elif kind == "p2p" and e.get("op") == "send" and phase == "begin":
            sends[(rank, e.get("peer"), e.get("tag", 0))] += 1
        elif kind == "p2p" and e.get("op") == "recv" and phase == "end" and e.get("peer") is not None:
            link = (e["peer"], rank, e.get("tag", 0))
            recvs[link] += 1
            if recvs[link] > sends[link]:
                found.append(f"seq {e['seq']}: rank {rank}'s receive from {e['peer']} ends before the send began")
    return found


def test_every_lesson_log_is_causal(every_lesson_logs):
    broken = {f"{r['spec'][0]} at {r['spec'][1]} ranks {r['spec'][2]}": violations(r["events"])[:3]
              for r in every_lesson_logs}
    assert not {name: v for name, v in broken.items() if v}
    ended = {r["spec"][0]: r["run"]["status"] for r in every_lesson_logs}
    assert ended.pop("deadlock") == "failed" and set(ended.values()) == {"done"}, ended


def _c(rank, phase, op="all_reduce", ranks=(0, 1), cseq=1, **more):
    return {"kind": "collective", "rank": rank, "phase": phase, "op": op, "group": "world", "ranks": list(ranks),
            "cseq": cseq, **more}


def test_an_end_waits_for_every_members_begin_then_comes_in_arrival_order():
    order = CausalOrder()
    assert order.admit(_c(0, "begin")) == [_c(0, "begin")]
    assert order.admit(_c(0, "end")) == []                      # rank 1 has not begun: held
    assert order.admit({"kind": "check", "rank": 0, "name": "y"}) == []   # rank 0's next event waits behind it
    assert order.admit({"kind": "log", "rank": 1, "message": "hi"}) == [{"kind": "log", "rank": 1, "message": "hi"}]
    assert order.admit(_c(1, "begin")) == [_c(1, "begin"), _c(0, "end"), {"kind": "check", "rank": 0, "name": "y"}]
    assert order.holding == 0


def test_a_broadcast_root_leaves_early_but_a_receiver_waits_for_the_root():
    order = CausalOrder()
    root_begin, root_end = _c(0, "begin", op="broadcast", root=0), _c(0, "end", op="broadcast", root=0)
    assert order.admit(root_begin) == [root_begin]
    assert order.admit(root_end) == [root_end]                   # the root gives; it need not wait
    order = CausalOrder()
    receiver_end = _c(1, "end", op="broadcast", root=0)
    assert order.admit(_c(1, "begin", op="broadcast", root=0))
    assert order.admit(receiver_end) == []
    assert order.admit(root_begin)[-1] == receiver_end


def test_a_receive_waits_for_its_send_and_matches_sends_in_order():
    order = CausalOrder()
    recv_end = {"kind": "p2p", "op": "recv", "rank": 1, "peer": 0, "tag": 0, "phase": "end"}
    send_begin = {"kind": "p2p", "op": "send", "rank": 0, "peer": 1, "tag": 0, "phase": "begin"}
    assert order.admit(recv_end) == []
    assert order.admit(dict(recv_end)) == []
    assert order.admit(send_begin) == [send_begin, recv_end]     # one send: one receive may end
    assert order.admit(dict(send_begin)) == [send_begin, recv_end]


def test_an_event_whose_cause_never_comes_is_let_through_after_the_hold_limit_and_at_the_end():
    now = [0.0]
    order = CausalOrder(max_hold_s=2.0, clock=lambda: now[0])
    order.admit(_c(0, "begin"))
    assert order.admit(_c(0, "end")) == []
    now[0] = 1.0
    assert order.overdue() == []
    now[0] = 2.5
    assert order.overdue() == [_c(0, "end")]
    order.admit(_c(1, "end", cseq=2))
    assert order.flush() == [_c(1, "end", cseq=2)] and order.holding == 0


@pytest.mark.parametrize("op, root, rank, needed", [
    ("all_reduce", None, 1, [0, 1, 2]), ("reduce", 0, 0, [0, 1, 2]), ("reduce", 0, 1, []),
    ("gather", 2, 2, [0, 1, 2]), ("scatter", 0, 1, [0]), ("scatter", 0, 0, []), ("broadcast", 1, 2, [1])])
def test_whose_begin_an_end_needs(op, root, rank, needed):
    assert _needed_members(_c(rank, "end", op=op, ranks=(0, 1, 2), root=root)) == needed
