"""`app.flight_recorder` on hand-written event logs: which calls are still open, and the hang report
(per rank and group the last collective begun and completed; the stuck collective; what kind of
mismatch it is; which ranks never arrived)."""

from __future__ import annotations

from app.flight_recorder import diagnose, explain_crash, open_calls, rank_states

SITE = "workers/lessons/x/program.py"


def coll(rank: int, phase: str, cseq: int, op: str = "all_reduce", group: str = "world",
         ranks: tuple[int, ...] = (0, 1, 2), shape: tuple[int, ...] = (4,), line: int = 10, **extra) -> dict:
    return {"kind": "collective", "phase": phase, "rank": rank, "op": op, "group": group, "ranks": list(ranks),
            "cseq": cseq, "shape": list(shape), "site": f"{SITE}:{line}", **extra}


def p2p(rank: int, phase: str, op: str, peer: int | None, tag: int = 0, line: int = 20) -> dict:
    return {"kind": "p2p", "phase": phase, "rank": rank, "op": op, "group": "world", "ranks": [0, 1, 2],
            "peer": peer, "tag": tag, "shape": [4], "site": f"{SITE}:{line}"}


def completed(cseq: int, world: int = 3, op: str = "all_reduce", line: int = 10) -> list[dict]:
    """Collective #cseq of the world group, begun and completed by every rank."""
    ranks = tuple(range(world))
    return [coll(r, "begin", cseq, op, ranks=ranks, line=line) for r in ranks] + \
           [coll(r, "end", cseq, op, ranks=ranks, line=line) for r in ranks]


def noise() -> list[dict]:
    """Events the flight recorder must ignore: the server's, tensors, checks, gates, compute spans."""
    return [{"kind": "run", "rank": None, "status": "running"},
            {"kind": "tensor", "rank": 0, "name": "x"},
            {"kind": "gate", "phase": "waiting", "rank": 1, "call": "collective", "op": "all_reduce", "cseq": 9},
            {"kind": "compute", "phase": "begin", "rank": 2, "name": "F"},
            {"kind": "check", "rank": 0, "name": "y", "passed": True}]


# ---- nothing open --------------------------------------------------------------------------------

def test_a_log_with_every_call_completed_has_nothing_open():
    events = noise() + completed(1) + completed(2, op="all_gather", line=11) + [
        p2p(0, "begin", "send", 1), p2p(1, "begin", "recv", 0), p2p(1, "end", "recv", 0), p2p(0, "end", "send", 1)]
    assert open_calls(events, 3) == []
    report = diagnose(events, 3)
    assert report["mismatch"] == "none"
    assert (report["group"], report["cseq"], report["missing"]) == (None, None, [])
    assert report["message"] == "no rank is inside a collective or send/recv"
    for rank in "012":
        world = report["ranks"][rank]["world"]
        assert world["last_begun"] == world["last_completed"] == {
            "cseq": 2, "op": "all_gather", "shape": [4], "site": f"{SITE}:11"}
        assert "open" not in world
    assert report["ranks"]["0"]["p2p"]["last_completed"] == {"op": "send", "peer": 1, "tag": 0, "shape": [4],
                                                            "site": f"{SITE}:20"}


def test_an_empty_log_names_every_rank_with_nothing():
    report = diagnose([], 4)
    assert report["ranks"] == {"0": {}, "1": {}, "2": {}, "3": {}}
    assert report["mismatch"] == "none"


def test_a_call_that_raised_has_ended():
    events = [coll(r, "begin", 1, ranks=(0, 1), shape=(2,)) for r in (0, 1)] + \
             [coll(r, "end", 1, ranks=(0, 1), shape=(2,), error="RuntimeError: peer closed") for r in (0, 1)]
    assert open_calls(events, 2) == []
    assert diagnose(events, 2)["mismatch"] == "none"


def test_a_recv_from_any_source_ends_when_its_end_names_the_sender():
    """The tracer learns an any-source recv's peer only when it returns: the `begin` has
    `peer: null`, the `end` the sender. That recv is over; it must not look stuck forever."""
    events = completed(1, world=2) + [
        p2p(1, "begin", "send", 0), p2p(0, "begin", "recv", None),
        p2p(1, "end", "send", 0), p2p(0, "end", "recv", 1)]
    assert open_calls(events, 2) == []
    report = diagnose(events, 2)
    assert report["mismatch"] == "none"
    assert report["ranks"]["0"]["p2p"]["last_completed"]["peer"] == 1


def test_open_calls_are_the_begun_and_not_completed():
    events = completed(1) + [coll(0, "begin", 2), coll(1, "begin", 2), coll(1, "end", 2)]
    [stuck] = open_calls(events, 3)
    assert (stuck["rank"], stuck["cseq"], stuck["op"]) == (0, 2, "all_reduce")
    states = rank_states(events, 3)
    assert [c["cseq"] for c in states[0]["world"]["open"]] == [2]
    assert states[1]["world"]["open"] == [] and states[2]["world"]["open"] == []


# ---- collectives ---------------------------------------------------------------------------------

def test_missing_ranks():
    """Ranks 0 and 1 wait in all-reduce #2; rank 2 skipped it."""
    events = noise() + completed(1) + [coll(0, "begin", 2, line=12), coll(1, "begin", 2, line=12)]
    report = diagnose(events, 3)
    assert report["mismatch"] == "missing ranks"
    assert (report["group"], report["cseq"], report["missing"]) == ("world", 2, [2])
    assert report["message"] == ("ranks 0 and 1 wait in all_reduce (collective #2 of group 'world'); "
                                 "rank 2 never entered it (rank 2 last completed #1 all_reduce)")
    for rank in "01":
        assert report["ranks"][rank]["world"] == {
            "last_begun": {"cseq": 2, "op": "all_reduce", "shape": [4], "site": f"{SITE}:12"},
            "last_completed": {"cseq": 1, "op": "all_reduce", "shape": [4], "site": f"{SITE}:10"}}
    assert report["ranks"]["2"]["world"]["last_begun"]["cseq"] == 1
    assert report["ranks"]["2"]["world"]["last_completed"]["cseq"] == 1


def test_a_missing_rank_that_finished_its_program_is_said_to_have_finished():
    events = completed(1) + [coll(0, "begin", 2), coll(1, "begin", 2), {"kind": "rank", "rank": 2, "status": "finished"}]
    report = diagnose(events, 3)
    assert report["missing"] == [2]
    assert report["message"].endswith("(rank 2 last completed #1 all_reduce and finished its program)")


def test_a_rank_that_never_called_anything_is_missing_and_said_so():
    events = [coll(0, "begin", 1, ranks=(0, 1))]
    report = diagnose(events, 2)
    assert (report["mismatch"], report["missing"]) == ("missing ranks", [1])
    assert report["message"].endswith("(rank 1 last completed nothing)")
    assert report["ranks"]["1"] == {}


def test_missing_ranks_are_counted_in_the_stuck_group_only():
    """A tp group {0, 1} of a 4-rank world: rank 1 skipped tp all-gather #2; ranks 2 and 3 are not
    members, and the data-parallel group, where everything completed, is not the problem."""
    tp = dict(group="tp", ranks=(0, 1), op="all_gather")
    dp = dict(group="dp", ranks=(0, 2))
    events = [coll(r, phase, 1, **tp) for phase in ("begin", "end") for r in (0, 1)] + \
             [coll(r, phase, 1, **dp) for phase in ("begin", "end") for r in (0, 2)] + \
             [coll(r, phase, 2, **dp) for phase in ("begin", "end") for r in (0, 2)] + \
             [coll(0, "begin", 2, **tp)]
    report = diagnose(events, 4)
    assert (report["mismatch"], report["group"], report["cseq"], report["missing"]) == ("missing ranks", "tp", 2, [1])
    assert report["ranks"]["0"]["dp"]["last_completed"]["cseq"] == 2
    assert report["ranks"]["0"]["tp"]["last_begun"] == {"cseq": 2, "op": "all_gather", "shape": [4],
                                                        "site": f"{SITE}:10"}
    assert report["ranks"]["3"] == {}


def test_op_mismatch():
    events = completed(1) + [coll(0, "begin", 2, op="all_reduce"), coll(1, "begin", 2, op="all_gather"),
                             coll(2, "begin", 2, op="all_gather")]
    report = diagnose(events, 3)
    assert report["mismatch"] == "op mismatch"
    assert (report["group"], report["cseq"], report["missing"]) == ("world", 2, [])
    assert report["message"] == ("the ranks called different collectives as collective #2 of group 'world': "
                                 "rank 0: all_reduce, rank 1: all_gather, rank 2: all_gather")
    assert report["ranks"]["0"]["world"]["last_begun"]["op"] == "all_reduce"
    assert report["ranks"]["1"]["world"]["last_begun"]["op"] == "all_gather"


def test_op_mismatch_with_a_rank_missing_is_still_an_op_mismatch():
    events = [coll(0, "begin", 1, op="broadcast"), coll(1, "begin", 1, op="all_reduce")]
    report = diagnose(events, 3)
    assert (report["mismatch"], report["missing"]) == ("op mismatch", [2])


def test_size_mismatch():
    events = completed(1) + [coll(r, "begin", 2, shape=(4 + r,)) for r in range(3)]
    report = diagnose(events, 3)
    assert report["mismatch"] == "size mismatch"
    assert (report["group"], report["cseq"], report["missing"]) == ("world", 2, [])
    assert report["message"] == ("the ranks passed different shapes to all_reduce (collective #2 of group "
                                 "'world'): rank 0: [4], rank 1: [5], rank 2: [6]")
    assert [report["ranks"][str(r)]["world"]["last_begun"]["shape"] for r in range(3)] == [[4], [5], [6]]


def test_size_mismatch_is_seen_even_when_one_rank_came_out():
    """gloo may let the rank with the shortest tensor out of a mismatched all-reduce."""
    events = completed(1) + [coll(r, "begin", 2, shape=(4 + r,)) for r in range(3)] + [coll(0, "end", 2, shape=(4,))]
    assert diagnose(events, 3)["mismatch"] == "size mismatch"


def test_every_rank_inside_and_none_out_is_unknown():
    events = [coll(r, "begin", 1) for r in range(3)]
    report = diagnose(events, 3)
    assert (report["mismatch"], report["missing"], report["cseq"]) == ("unknown", [], 1)


# ---- send / recv ------------------------------------------------------------------------------

def test_unmatched_send_and_recv():
    """Rank 0 sends with tag 1, rank 1 waits for tag 0: they never pair up."""
    events = completed(1, world=2) + [p2p(0, "begin", "send", 1, tag=1, line=38),
                                      p2p(1, "begin", "recv", 0, tag=0, line=40)]
    report = diagnose(events, 2)
    assert report["mismatch"] == "unmatched send/recv"
    assert (report["group"], report["cseq"]) == ("p2p", None)
    assert report["message"] == ("rank 0 waits in send to rank 1 (tag 1); rank 1 waits in recv from rank 0 (tag 0): "
                                 "no send and recv pair up (same ranks, same tag)")
    assert report["ranks"]["0"]["p2p"] == {"last_begun": {"op": "send", "peer": 1, "tag": 1, "shape": [4],
                                                          "site": f"{SITE}:38"}}
    assert report["ranks"]["1"]["p2p"]["last_begun"] == {"op": "recv", "peer": 0, "tag": 0, "shape": [4],
                                                         "site": f"{SITE}:40"}
    assert report["ranks"]["0"]["world"]["last_completed"]["cseq"] == 1


def test_a_send_to_a_rank_that_never_receives():
    events = [p2p(0, "begin", "send", 2)]
    report = diagnose(events, 3)
    assert (report["mismatch"], report["missing"]) == ("unmatched send/recv", [2])
    assert report["message"].startswith("rank 0 waits in send to rank 2 (tag 0)")


def test_a_stuck_collective_is_reported_before_stuck_send_recv():
    events = [p2p(0, "begin", "send", 1, tag=5),
              coll(1, "begin", 1, ranks=(0, 1)),
              coll(2, "begin", 1, ranks=(1, 2), group="group1"), coll(2, "end", 1, ranks=(1, 2), group="group1")]
    report = diagnose(events, 3)
    assert (report["mismatch"], report["group"], report["cseq"]) == ("missing ranks", "world", 1)
    assert report["missing"] == [0]


def test_a_recv_from_a_named_rank_ends_its_own_begin_not_an_any_source_one():
    events = [p2p(0, "begin", "recv", None), p2p(0, "begin", "recv", 2), p2p(0, "end", "recv", 2)]
    [still] = open_calls(events, 3)
    assert (still["op"], still["peer"]) == ("recv", None)


# ---- a crash with the ranks inside disagreeing collectives ----------------------------------------

CRASH = {"kind": "crash", "rank": 0, "message": "rank 0 was killed by SIGABRT", "site": f"{SITE}:34"}


def test_a_crash_inside_a_shape_mismatch_gets_the_hang_reports_diagnosis():
    """gloo aborts rank 0 of a 2-rank all-reduce whose lengths differ: both ranks are still inside it."""
    events = completed(1, world=2) + [coll(0, "begin", 2, ranks=(0, 1), shape=(4,), line=34),
                                      coll(1, "begin", 2, ranks=(0, 1), shape=(5,), line=34)]
    error = explain_crash(CRASH, events, 2)
    assert (error["kind"], error["rank"], error["site"]) == ("crash", 0, f"{SITE}:34")
    assert (error["mismatch"], error["group"], error["cseq"], error["missing"]) == ("size mismatch", "world", 2, [])
    assert error["message"] == ("rank 0 was killed by SIGABRT: the ranks passed different shapes to all_reduce "
                                "(collective #2 of group 'world'): rank 0: [4], rank 1: [5]")
    assert error["ranks"]["1"]["world"]["last_begun"]["shape"] == [5]
    assert error["ranks"]["1"]["world"]["last_completed"]["cseq"] == 1


def test_a_crash_where_one_rank_left_the_mismatched_collective_is_still_diagnosed():
    events = completed(1, world=2) + [coll(1, "begin", 2, ranks=(0, 1), op="all_gather"),
                                      coll(1, "end", 2, ranks=(0, 1), op="all_gather"),
                                      coll(0, "begin", 2, ranks=(0, 1))]
    error = explain_crash(CRASH, events, 2)
    assert error["mismatch"] == "op mismatch"
    assert error["message"].endswith("rank 0: all_reduce, rank 1: all_gather")


def test_a_crash_with_agreeing_calls_or_none_open_is_left_as_it_is():
    """A rank that dies between collectives leaves its peers waiting for it: that is the crash, not a mismatch."""
    waiting = completed(1) + [coll(1, "begin", 2), coll(2, "begin", 2)]
    assert explain_crash(CRASH, waiting, 3) == CRASH
    assert explain_crash(CRASH, completed(1), 3) == CRASH
    assert explain_crash(CRASH, [p2p(1, "begin", "recv", 0)], 3) == CRASH
