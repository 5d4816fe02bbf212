"""Hang detection on the live server: each bug of the `deadlock` lesson is stopped after `timeout_s`
without progress and reported as a `hang` with the right mismatch and, per rank and group, the last
collective begun and completed — within the timeout plus 2 s, with no process left behind. At 2
ranks gloo aborts a shape mismatch instead of hanging: the crash gets the same diagnosis. A rank
waiting at a step-mode gate is a person's pause, not a hang."""

from __future__ import annotations

import time

import pytest

from app.flight_recorder import ranks_phrase
from tests import web
from tests.app.helpers import RunProcesses, descendants, events, is_final, launcher_pid, processes, ws_connect
from tests.app.test_step_mode import Stepper

TIMEOUT_S = 2
VARIANTS = {   # bug → world size
    "skip_collective": 4,
    "op_mismatch": 3,
    "shape_mismatch": 3,
    "unmatched_send": 2,
}


def living_children_of_launcher(server) -> list:
    return [p for p in descendants(launcher_pid(server), processes()) if p.living]


@pytest.fixture(scope="module")
def hung(server) -> dict[str, dict]:
    """Each variant, two at a time (the server runs two at once, so none waits in the queue and the
    time from POST to the final status is the detection time): {"run", "events", "elapsed"}."""
    results: dict[str, dict] = {}
    bugs = list(VARIANTS)
    with RunProcesses(server) as procs:
        for pair in (bugs[:2], bugs[2:]):
            started = {}
            for bug in pair:
                t0 = time.monotonic()
                run = server.start_run("deadlock", VARIANTS[bug], {"bug": bug, "timeout_s": TIMEOUT_S})
                started[bug] = (run["id"], t0)
            while len(started) > 0:
                for bug, (run_id, t0) in list(started.items()):
                    run = web.get(f"{server.url}/api/runs/{run_id}").json()
                    if run["status"] in ("done", "failed", "cancelled"):
                        results[bug] = {"run": run, "elapsed": time.monotonic() - t0}
                        del started[bug]
                    elif time.monotonic() - t0 > 30:
                        web.delete(f"{server.url}/api/runs/{run_id}")
                        raise AssertionError(f"{bug} was never reported")
                time.sleep(0.02)
        results["left_behind"] = procs.left_behind()
        results["seen"] = len(procs.seen)
    for bug in VARIANTS:
        results[bug]["events"] = events(server, results[bug]["run"]["id"])
    return results


@pytest.mark.parametrize("bug", VARIANTS)
def test_each_bug_is_reported_as_a_hang_within_the_timeout_plus_2_s(hung, bug):
    """Timed on the run's own clock, from the last call any rank began (where the hang starts) to the
    report; and, looser, from the POST (which adds starting the ranks on a possibly busy machine)."""
    run, elapsed, log = hung[bug]["run"], hung[bug]["elapsed"], hung[bug]["events"]
    assert run["status"] == "failed", run
    assert run["error"]["kind"] == "hang"
    hang_began = max(e["t"] for e in log if e["kind"] in ("collective", "p2p"))
    assert TIMEOUT_S <= log[-1]["t"] - hang_began <= TIMEOUT_S + 2, log[-1]["t"] - hang_began
    assert TIMEOUT_S <= elapsed <= TIMEOUT_S + 8, elapsed
    assert run["error"]["message"].startswith(f"hung for {TIMEOUT_S} s: ")
    assert run["params"] == {"bug": bug, "timeout_s": TIMEOUT_S}
    final = hung[bug]["events"][-1]
    assert is_final(final) and final["status"] == "failed" and final["error"] == run["error"]


def _state(error: dict, rank: int, group: str = "world") -> dict:
    return error["ranks"][str(rank)][group]


def test_skip_collective_names_the_missing_rank(hung):
    world = VARIANTS["skip_collective"]
    error = hung["skip_collective"]["run"]["error"]
    assert (error["mismatch"], error["missing"]) == ("missing ranks", [world - 1])
    assert (error["group"], error["cseq"]) == ("world", 2)
    assert sorted(error["ranks"], key=int) == [str(r) for r in range(world)]
    for rank in range(world - 1):
        state = _state(error, rank)
        assert (state["last_begun"]["cseq"], state["last_begun"]["op"]) == (2, "all_reduce")
        assert (state["last_completed"]["cseq"], state["last_completed"]["op"]) == (1, "all_reduce")
    last = _state(error, world - 1)
    assert last["last_begun"]["cseq"] == last["last_completed"]["cseq"] == 1
    assert f"; rank {world - 1} never entered it" in error["message"]
    assert f"rank {world - 1} last completed #1 all_reduce and finished its program" in error["message"]
    assert str(ranks_phrase(list(range(world - 1)))) + (" waits" if world == 2 else " wait") + " in all_reduce" in error["message"]
    assert "[" not in error["message"]     # ranks in words, not a Python list


def test_op_mismatch_names_each_ranks_op(hung):
    world = VARIANTS["op_mismatch"]
    error = hung["op_mismatch"]["run"]["error"]
    assert (error["mismatch"], error["missing"], error["cseq"]) == ("op mismatch", [], 2)
    ops = {r: _state(error, r)["last_begun"]["op"] for r in range(world)}
    assert ops == {0: "all_reduce", **{r: "all_gather" for r in range(1, world)}}
    for rank in range(world):
        assert _state(error, rank)["last_begun"]["cseq"] == 2
        completed = _state(error, rank)["last_completed"]
        assert (completed["cseq"], completed["op"]) == (1, "all_reduce")
    assert "rank 0: all_reduce, rank 1: all_gather" in error["message"]


def test_shape_mismatch_names_each_ranks_shape(hung):
    world = VARIANTS["shape_mismatch"]
    error = hung["shape_mismatch"]["run"]["error"]
    assert (error["mismatch"], error["missing"], error["cseq"]) == ("size mismatch", [], 2)
    for rank in range(world):
        begun = _state(error, rank)["last_begun"]
        assert (begun["cseq"], begun["op"], begun["shape"]) == (2, "all_reduce", [4 + rank])
        assert _state(error, rank)["last_completed"]["cseq"] >= 1
    assert "rank 0: [4], rank 1: [5], rank 2: [6]" in error["message"]


def test_unmatched_send_names_both_ends_and_their_tags(hung):
    error = hung["unmatched_send"]["run"]["error"]
    assert (error["mismatch"], error["group"]) == ("unmatched send/recv", "p2p")
    send, recv = _state(error, 0, "p2p"), _state(error, 1, "p2p")
    assert {k: send["last_begun"][k] for k in ("op", "peer", "tag")} == {"op": "send", "peer": 1, "tag": 1}
    assert {k: recv["last_begun"][k] for k in ("op", "peer", "tag")} == {"op": "recv", "peer": 0, "tag": 0}
    assert "last_completed" not in send and "last_completed" not in recv
    for rank in (0, 1):   # the healthy all-reduce before them did complete
        completed = _state(error, rank)["last_completed"]
        assert (completed["cseq"], completed["op"]) == (1, "all_reduce")
    assert "rank 0 waits in send to rank 1 (tag 1)" in error["message"]
    assert "rank 1 waits in recv from rank 0 (tag 0)" in error["message"]


@pytest.mark.parametrize("bug", ["shape_mismatch", "op_mismatch"])
def test_at_2_ranks_a_mismatch_gets_the_same_diagnosis_whether_it_hangs_or_gloo_aborts(server, bug):
    """gloo aborts rank 0 (SIGABRT) of a 2-rank all-reduce whose lengths differ, where 3–8 ranks hang:
    the report is still the flight recorder's, from the ranks' last collectives."""
    run = server.run("deadlock", 2, {"bug": bug, "timeout_s": TIMEOUT_S})
    error = run["error"]
    assert run["status"] == "failed" and error["kind"] in ("hang", "crash"), error
    listing = "rank 0: [4], rank 1: [5]" if bug == "shape_mismatch" else "rank 0: all_reduce, rank 1: all_gather"
    assert error["mismatch"] == bug.replace("shape", "size").replace("_", " ")
    assert (error["group"], error["cseq"], error["missing"]) == ("world", 2, [])
    assert error["message"].endswith(listing), error["message"]
    if error["kind"] == "crash":
        assert error["message"].startswith("rank 0 was killed by SIGABRT: ") or "raised" in error["message"]
    for rank in (0, 1):
        begun = _state(error, rank)["last_begun"]
        assert begun["cseq"] == 2 and _state(error, rank)["last_completed"]["cseq"] >= 1   # gloo may let one out
        assert begun["op"] == ("all_gather" if bug == "op_mismatch" and rank == 1 else "all_reduce")


def test_a_shape_bug_planted_in_tp_mlp_is_diagnosed_at_2_ranks(planted_server):
    """A copy of tp_mlp whose rank 1 all-reduces one row fewer in g (tests/app/planted.py): gloo aborts
    (or the run hangs), and the report names the size mismatch and each rank's shape, from the ranks'
    last collectives."""
    run = planted_server.run("tp_mlp_short", 2)
    error = run["error"]
    assert run["status"] == "failed" and error["kind"] in ("hang", "crash"), error
    assert (error["mismatch"], error["group"], error["missing"]) == ("size mismatch", "tp", [])
    assert error["message"].endswith("rank 0: [8, 16], rank 1: [7, 16]"), error["message"]
    assert "tp_mlp_short/program.py:" in _state(error, 1, "tp")["last_begun"]["site"]   # the planted line


@pytest.mark.parametrize("bug", VARIANTS)
def test_the_stuck_calls_never_ended(hung, bug):
    got = hung[bug]["events"]
    error = hung[bug]["run"]["error"]
    for rank, groups in error["ranks"].items():
        for group, state in groups.items():
            if state.get("last_begun") != state.get("last_completed"):
                begun = state["last_begun"]
                ends = [e for e in got if e["rank"] == int(rank) and e.get("phase") == "end"
                        and e["kind"] in ("collective", "p2p") and e["op"] == begun["op"]
                        and e.get("cseq") == begun.get("cseq") and (e["kind"] == "collective") == (group != "p2p")]
                # a begun call that has no end (gloo may let one rank out of a shape mismatch)
                assert not ends or bug == "shape_mismatch", (rank, group, ends)


def test_no_process_is_left_behind(server, hung):
    assert hung["seen"] >= sum(world + 1 for world in VARIANTS.values())   # every supervisor and rank was seen
    assert hung["left_behind"] == []
    deadline = time.monotonic() + 5
    while living_children_of_launcher(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert living_children_of_launcher(server) == []


def test_a_step_run_waiting_at_a_gate_is_not_hung(server_factory, tmp_path):
    """With a 1 s hang timeout: rank 0 released into an all-reduce its peers have not entered (they
    wait at their gates) sits there 2.5 s and the run is still running; meanwhile a run whose rank
    sleeps outside a collective is reported hung after ~1 s. Cancelling leaves no process. A step
    run left alone ends at the step-mode time limit, as a timeout (not a hang) that names that limit."""
    live = server_factory(tmp_path, "--hang-timeout", "1", "--step-time-limit", "6", "--max-concurrent-runs", "3")
    with RunProcesses(live) as procs:
        forgotten = live.start_run("collectives", 2, {"op": "barrier"}, step=True)
        stepped = live.start_run("collectives", 3, {"op": "all_reduce"}, step=True)
        try:
            with ws_connect(live, stepped["id"]) as ws:
                s = Stepper(ws)
                s.until_waiting({0, 1, 2})
                s.send(op="step", rank=0)
                s.until(lambda e: e.get("kind") == "collective" and e["phase"] == "begin" and e["rank"] == 0)
                t0 = time.monotonic()
                stuck = live.start_run("crash", 2, {"how": "hang", "rank": 1})
                reported = live.wait_run(stuck["id"], timeout=10)
                assert reported["status"] == "failed" and reported["error"]["kind"] == "hang"
                assert (reported["error"]["mismatch"], reported["error"]["missing"]) == ("missing ranks", [1])
                assert reported["error"]["message"].startswith("hung for 1 s: ")
                time.sleep(max(0.0, 2.5 - (time.monotonic() - t0)))
                came = s.quiet_for(0.1)
                assert not [e for e in came if e.get("kind") == "run"], came
                run = web.get(f"{live.url}/api/runs/{stepped['id']}").json()
                assert (run["status"], run["error"]) == ("running", None)
        finally:
            cancelled = web.delete(f"{live.url}/api/runs/{stepped['id']}").json()
        assert cancelled["status"] == "cancelled"
        assert cancelled["error"]["kind"] == "cancelled"
        timed_out = live.wait_run(forgotten["id"], timeout=15)
        assert (timed_out["status"], timed_out["error"]["kind"]) == ("failed", "timeout")
        assert timed_out["error"]["message"] == "the run passed its wall-clock limit of 6 s"
        assert procs.left_behind() == []
    assert living_children_of_launcher(live) == []
