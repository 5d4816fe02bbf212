"""Step mode over the websocket of a live run: every rank stops at a gate before each collective or
send/recv; `{"op": "step", "rank": r}` releases one, `{"op": "step"}` every waiting rank,
`{"op": "continue"}` stops gating, `{"op": "pause"}` gates again. A released rank enters its
collective and stays blocked there until its peers arrive — a collective is a rendezvous."""

from __future__ import annotations

import json
import time

import pytest

from tests import web
from tests.app.helpers import events, is_final, ws_connect, ws_receive, ws_until_final


class Stepper:
    """A websocket client of one run that keeps every message it received, in order."""

    def __init__(self, ws):
        self.ws = ws
        self.got: list[dict] = []

    def send(self, **message) -> None:
        self.ws.send(json.dumps(message))

    def next(self, timeout: float = 10) -> dict:
        self.got.append(ws_receive(self.ws, timeout))
        return self.got[-1]

    def until(self, predicate, timeout: float = 15) -> dict:
        """Receive until a message satisfies `predicate`; that message."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.next(max(deadline - time.monotonic(), 0.01))
            if predicate(message):
                return message

    def quiet_for(self, seconds: float) -> list[dict]:
        """Everything that arrives within `seconds`."""
        deadline, came = time.monotonic() + seconds, []
        while (left := deadline - time.monotonic()) > 0:
            try:
                came.append(self.next(left))
            except TimeoutError:
                break
        return came

    def waiting(self) -> set[int]:
        """Ranks whose last gate event says they wait."""
        last = {}
        for e in self.got:
            if e.get("kind") == "gate":
                last[e["rank"]] = e["phase"]
        return {r for r, phase in last.items() if phase == "waiting"}

    def until_waiting(self, ranks: set[int], timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while not ranks <= self.waiting():
            self.next(max(deadline - time.monotonic(), 0.01))


def span(e: dict, kind: str, phase: str, rank: int | None = None) -> bool:
    return e.get("kind") == kind and e.get("phase") == phase and (rank is None or e["rank"] == rank)


def cancel(server, run_id: str) -> None:
    web.delete(f"{server.url}/api/runs/{run_id}")


def test_a_step_run_says_so_and_every_rank_waits_at_its_first_collective(server):
    run = server.start_run("collectives", 3, {"op": "broadcast", "root": 2}, step=True)
    try:
        assert run["step"] is True
        with ws_connect(server, run["id"]) as ws:
            s = Stepper(ws)
            s.until_waiting({0, 1, 2})
            gates = [e for e in s.got if e["kind"] == "gate"]
            assert len(gates) == 3
            for gate in gates:
                assert {k: gate[k] for k in ("phase", "call", "op", "group", "ranks", "cseq", "shape", "bytes")} == {
                    "phase": "waiting", "call": "collective", "op": "broadcast", "group": "world",
                    "ranks": [0, 1, 2], "cseq": 1, "shape": [6], "bytes": 24}
                assert gate["site"].startswith("workers/lessons/collectives/program.py:")
            assert s.quiet_for(0.5) == []                  # nobody goes on by itself
            assert not [e for e in events(server, run["id"]) if e["kind"] == "collective"]
            assert web.get(f"{server.url}/api/runs/{run['id']}").json()["status"] == "running"
    finally:
        cancel(server, run["id"])


def test_a_released_rank_blocks_in_the_collective_until_its_peers_arrive(server):
    run = server.start_run("collectives", 3, {"op": "all_reduce"}, step=True)
    try:
        with ws_connect(server, run["id"]) as ws:
            s = Stepper(ws)
            s.until_waiting({0, 1, 2})
            s.send(op="step", rank=0)
            released = s.until(lambda e: e.get("kind") == "gate")
            assert (released["rank"], released["phase"], released["op"]) == (0, "released", "all_reduce")
            begin = s.until(lambda e: span(e, "collective", "begin"))
            assert (begin["rank"], begin["op"], begin["cseq"]) == (0, "all_reduce", 1)
            # rank 0 is inside all_reduce; ranks 1 and 2 still wait at their gates: nothing comes out
            came = s.quiet_for(1.0)
            assert not [e for e in came if e.get("kind") in ("collective", "check", "run")], came
            assert s.waiting() == {1, 2}
            assert web.get(f"{server.url}/api/runs/{run['id']}").json()["status"] == "running"

            s.send(op="step")                              # release every waiting rank
            s.got += ws_until_final(ws)
        got = s.got
        assert got[-1]["status"] == "done"
        ends = {e["rank"]: e for e in got if span(e, "collective", "end")}
        assert sorted(ends) == [0, 1, 2]
        assert ends[0]["duration"] >= 0.9                  # the second rank 0 spent waiting inside
        assert ends[1]["duration"] < ends[0]["duration"] and ends[2]["duration"] < ends[0]["duration"]
        # each rank's collective begins only after its gate released it
        for rank in range(3):
            order = [(e["kind"], e.get("phase")) for e in got
                     if e.get("rank") == rank and e["kind"] in ("gate", "collective")]
            assert order == [("gate", "waiting"), ("gate", "released"), ("collective", "begin"), ("collective", "end")]
        final = web.get(f"{server.url}/api/runs/{run['id']}").json()
        assert final["status"] == "done" and final["step"] is True
        assert len(final["checks"]) == 3 and all(c["passed"] for c in final["checks"])
        after = {e["rank"]: e["tensor"]["preview"][0] for e in got if e["kind"] == "tensor" and e["name"] == "after"}
        assert after == {r: [30.0, 33.0, 36.0, 39.0, 42.0, 45.0] for r in range(3)}   # Σ_r arange(6) + 10r
    finally:
        cancel(server, run["id"])


def test_stepping_a_rank_that_is_not_waiting_is_an_error(server):
    run = server.start_run("collectives", 2, {"op": "barrier"}, step=True)
    try:
        with ws_connect(server, run["id"]) as ws:
            s = Stepper(ws)
            s.until_waiting({0, 1})
            s.send(op="step", rank=1)
            s.until(lambda e: span(e, "collective", "begin", rank=1))     # rank 1 is inside the barrier now
            for bad in ({"op": "step", "rank": 1}, {"op": "step", "rank": 5}, {"op": "step", "rank": "0"},
                        {"op": "step", "rank": 0.5}, {"op": "jump"}):
                s.send(**bad)
                reply = s.until(lambda e: "error" in e or span(e, "collective", "end") or is_final(e))
                assert set(reply) == {"error", "code", "params"}, (bad, reply)
                assert isinstance(reply["error"], str) and reply["error"]
            s.send(op="step", rank=1)
            assert "rank 1 is not waiting" in s.until(lambda e: "error" in e)["error"]
            assert s.waiting() == {0}                       # none of that released rank 0
            assert not [e for e in s.got if span(e, "collective", "end")]
            s.send(op="step", rank=0)
            s.got += ws_until_final(ws)
            assert s.got[-1]["status"] == "done"
            s.send(op="step")                               # the run is over
            assert "has ended" in s.until(lambda e: "error" in e)["error"]
    finally:
        cancel(server, run["id"])


def test_continue_runs_to_the_end_without_further_gates(server):
    world = 4
    run = server.start_run("ring_allreduce", world, {"algorithm": "ring"}, step=True)
    try:
        with ws_connect(server, run["id"]) as ws:
            s = Stepper(ws)
            s.until_waiting(set(range(world)))
            seen_before = len(s.got)
            s.send(op="continue")
            s.got += ws_until_final(ws, timeout=30)
        got = s.got
        assert got[-1]["status"] == "done"
        after = got[seen_before:]
        # a rank may already have been on its way to a gate when `continue` came: one more at most
        waits_after = [e for e in after if e["kind"] == "gate" and e["phase"] == "waiting"]
        assert len(waits_after) <= world
        calls = [e for e in got if e["kind"] in ("collective", "p2p") and e["phase"] == "begin"]
        assert len(calls) == world * 4 * (world - 1)        # 2(p−1) steps, a send and a recv each
        final = web.get(f"{server.url}/api/runs/{run['id']}").json()
        assert all(c["passed"] for c in final["checks"]) and len(final["checks"]) == world
    finally:
        cancel(server, run["id"])


def test_pause_gates_again_after_continue(server):
    world = 4
    run = server.start_run("ring_allreduce", world, {"algorithm": "ring"}, step=True)
    try:
        with ws_connect(server, run["id"]) as ws:
            s = Stepper(ws)
            s.until_waiting(set(range(world)))
            s.send(op="continue")
            s.send(op="pause")
            mark = len(s.got)
            # the first sends and recvs go through; the ranks stop again at a later call
            gate = s.until(lambda e: (e.get("kind") == "gate" and e["phase"] == "waiting") or is_final(e))
            assert not is_final(gate), "the run ended without pausing again"
            assert gate["call"] == "p2p" and gate["op"] in ("send", "recv")
            assert any(span(e, "p2p", "begin") for e in s.got[mark:])   # a call went through before it
            s.quiet_for(0.5)
            assert web.get(f"{server.url}/api/runs/{run['id']}").json()["status"] == "running"
            s.send(op="continue")
            s.got += ws_until_final(ws, timeout=30)
        assert s.got[-1]["status"] == "done"
        final = web.get(f"{server.url}/api/runs/{run['id']}").json()
        assert all(c["passed"] for c in final["checks"]) and len(final["checks"]) == world
    finally:
        cancel(server, run["id"])


@pytest.mark.parametrize("world", [2, 4])
def test_tp_mlp_steps_to_the_end_one_release_at_a_time(server, world):
    """Release every waiting rank, again and again, until the run is done: the same calls as an
    unstepped run, each behind its own gate, and the same passing checks."""
    reference = server.run("tp_mlp", world)
    assert reference["status"] == "done"
    run = server.start_run("tp_mlp", world, step=True)
    try:
        with ws_connect(server, run["id"]) as ws:
            s = Stepper(ws)
            releases = 0
            while not (s.got and is_final(s.got[-1])):
                message = s.next(timeout=20)
                assert "error" not in message, message
                if message.get("kind") == "gate" and message["phase"] == "waiting":
                    s.send(op="step")
                    releases += 1
        got = s.got
        assert got[-1]["status"] == "done", got[-1]
        final = web.get(f"{server.url}/api/runs/{run['id']}").json()
        def checks(run: dict) -> list[tuple]:
            return sorted((c["rank"], c["name"], c["passed"]) for c in run["checks"])

        assert checks(final) == [(rank, name, True) for rank, name, _ in checks(reference)]

        def calls(log: list[dict], rank: int) -> list[tuple]:
            return [(e["op"], e["group"], e.get("cseq")) for e in log
                    if e["rank"] == rank and e["kind"] in ("collective", "p2p") and e["phase"] == "begin"]

        unstepped = events(server, reference["id"])
        for rank in range(world):
            assert calls(got, rank) == calls(unstepped, rank) and calls(got, rank)
            # every call: waiting, released, then its begin — with the gate naming the call
            gates = [e for e in got if e["rank"] == rank and e["kind"] == "gate"]
            assert [e["phase"] for e in gates] == ["waiting", "released"] * len(calls(got, rank))
            assert [(e["op"], e["group"], e.get("cseq")) for e in gates[::2]] == calls(got, rank)
            sequence = [e["phase"] if e["kind"] == "gate" else "call" for e in got if e["rank"] == rank
                        and (e["kind"] == "gate" or (e["kind"] in ("collective", "p2p") and e["phase"] == "begin"))]
            assert sequence == ["waiting", "released", "call"] * len(calls(got, rank))
        assert releases >= len(calls(got, 0))
    finally:
        cancel(server, run["id"])


def test_continue_said_before_the_ranks_start_reaches_them_when_they_do(limited_server):
    """Pressing Continue at once (the ranks not started yet: here, the run queued behind another)
    runs it to the end: a rank that connects after a continue or pause is told it."""
    holder = limited_server.start_run("collectives", 2, {}, step=True)     # holds the one slot, never stepped
    try:
        run = limited_server.start_run("collectives", 2, {}, step=True)
        assert web.get(f"{limited_server.url}/api/runs/{run['id']}").json()["status"] == "queued"
        with ws_connect(limited_server, run["id"]) as ws:
            ws.send(json.dumps({"op": "continue"}))
            cancel(limited_server, holder["id"])                            # now its ranks start
            got = ws_until_final(ws, timeout=60)
        assert got[-1]["status"] == "done"
        assert not [e for e in got if e["kind"] == "gate" and e["phase"] == "waiting"]
    finally:
        cancel(limited_server, holder["id"])
