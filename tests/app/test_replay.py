"""Recorded runs replay after a restart (servers one after another on one data dir): the same events
with the same seqs over the same socket, the same state, tensors and trace; a run in flight when the
server stopped or died is ended in its record and its log, never left running.

One test, three servers in a chain (a clean stop, then a kill), since each server start costs the
launcher's warm-up."""

from __future__ import annotations


from tests import web
from tests.app.helpers import RunProcesses, events, is_final, wait_for, ws_connect, ws_until_final


def _state(server, run_id: str) -> dict:
    response = web.get(f"{server.url}/api/runs/{run_id}")
    assert response.status_code == 200
    return response.json()


def _replays_exactly(server, run_id: str, recorded: list[dict]) -> None:
    assert events(server, run_id) == recorded
    with ws_connect(server, run_id) as ws:
        assert ws_until_final(ws) == recorded
    since = min(5, len(recorded) - 1)   # a run cancelled early may have logged only a few events
    with ws_connect(server, run_id, since=since) as ws:
        assert ws_until_final(ws) == recorded[since:]


def test_runs_replay_after_a_clean_stop_and_after_the_server_dies(server_factory, tmp_path):
    # ---- the first server runs three lessons, one still in flight when it stops cleanly ----
    first = server_factory(tmp_path)
    done = first.run("tp_mlp", 2)
    crashed = first.run("crash", 2, {"how": "raise", "rank": 1})
    in_flight = first.start_run("crash", 2, {"how": "hang", "rank": 1})
    wait_for(lambda: _state(first, in_flight["id"])["status"] == "running")
    before = {run["id"]: (_state(first, run["id"]), events(first, run["id"])) for run in (done, crashed)}
    tensor_id = next(e["tensor"]["id"] for e in before[done["id"]][1] if e["kind"] == "tensor")
    tensor = web.get(f"{first.url}/api/runs/{done['id']}/tensors/{tensor_id}").json()
    trace = web.get(f"{first.url}/api/runs/{done['id']}/trace.json").json()
    first.stop()

    # ---- the second replays them as they were ----
    second = server_factory(tmp_path)
    for run_id, (state, recorded) in before.items():
        assert _state(second, run_id) == state
        _replays_exactly(second, run_id, recorded)
    assert web.get(f"{second.url}/api/runs/{done['id']}/tensors/{tensor_id}").json() == tensor
    assert web.get(f"{second.url}/api/runs/{done['id']}/trace.json").json() == trace
    listed = {r["id"]: r["status"] for r in web.get(f"{second.url}/api/runs").json()}
    assert listed == {done["id"]: "done", crashed["id"]: "failed", in_flight["id"]: "cancelled"}

    stopped = _state(second, in_flight["id"])            # the clean stop ended it, and said why
    assert stopped["status"] == "cancelled"
    assert "server stopped" in stopped["error"]["message"]
    replay = events(second, in_flight["id"])
    assert replay[-1]["status"] == "cancelled"
    assert [e["seq"] for e in replay] == list(range(1, len(replay) + 1))
    _replays_exactly(second, in_flight["id"], replay)
    assert web.delete(f"{second.url}/api/runs/{in_flight['id']}").json()["status"] == "cancelled"

    # ---- the second server dies (SIGKILL, no shutdown at all) with a run in flight ----
    with RunProcesses(second) as procs:
        killed = second.start_run("crash", 2, {"how": "hang", "rank": 1})
        wait_for(lambda: sum(e["kind"] == "collective" for e in events(second, killed["id"])) >= 5)
        recorded = events(second, killed["id"])
        second.proc.kill()
        second.proc.wait()
    assert len(procs.seen) >= 3
    assert procs.left_behind() == []                     # the ranks died with the server

    # ---- the third finds it failed, in its record and at the end of its log ----
    third = server_factory(tmp_path)
    state = _state(third, killed["id"])
    assert state["status"] == "failed"
    assert state["error"]["kind"] == "interrupted"
    replay = events(third, killed["id"])
    assert replay[:len(recorded)] == recorded
    assert is_final(replay[-1]) and replay[-1]["status"] == "failed"
    assert replay[-1]["error"]["kind"] == "interrupted"
    assert [e["seq"] for e in replay] == list(range(1, len(replay) + 1))
    _replays_exactly(third, killed["id"], replay)
    for run_id, (state, recorded) in before.items():     # the earlier runs are untouched
        assert _state(third, run_id) == state
    assert third.run("tp_mlp", 1)["status"] == "done"    # and the new server runs lessons
