"""Recorded runs replay after a restart (two servers, one data dir): the same events with the same
seqs over the same socket, the same state, tensors and trace; a run in flight when the server went
away is marked failed, never left running."""

from __future__ import annotations

import httpx

from tests.app.helpers import RunProcesses, events, is_final, wait_for, ws_connect, ws_until_final


def _state(server, run_id: str) -> dict:
    response = httpx.get(f"{server.url}/api/runs/{run_id}")
    assert response.status_code == 200
    return response.json()


def test_runs_replay_after_a_restart(server_factory, tmp_path):
    first = server_factory(tmp_path)
    done = first.run("tp_mlp", 2)
    crashed = first.run("crash", 2, {"how": "raise", "rank": 1})
    in_flight = first.start_run("crash", 2, {"how": "hang", "rank": 1})
    wait_for(lambda: _state(first, in_flight["id"])["status"] == "running")
    before = {run["id"]: (_state(first, run["id"]), events(first, run["id"])) for run in (done, crashed)}
    tensor_id = next(e["tensor"]["id"] for e in before[done["id"]][1] if e["kind"] == "tensor")
    tensor = httpx.get(f"{first.url}/api/runs/{done['id']}/tensors/{tensor_id}").json()
    trace = httpx.get(f"{first.url}/api/runs/{done['id']}/trace.json").json()
    first.stop()                                        # a clean shutdown

    second = server_factory(tmp_path)
    for run_id, (state, recorded) in before.items():
        assert _state(second, run_id) == state
        assert events(second, run_id) == recorded
        with ws_connect(second, run_id) as ws:
            assert ws_until_final(ws) == recorded
        with ws_connect(second, run_id, since=5) as ws:
            assert ws_until_final(ws) == recorded[5:]
    assert httpx.get(f"{second.url}/api/runs/{done['id']}/tensors/{tensor_id}").json() == tensor
    assert httpx.get(f"{second.url}/api/runs/{done['id']}/trace.json").json() == trace
    listed = {r["id"]: r["status"] for r in httpx.get(f"{second.url}/api/runs").json()}
    assert listed == {done["id"]: "done", crashed["id"]: "failed", in_flight["id"]: "cancelled"}

    stopped = _state(second, in_flight["id"])           # the clean shutdown ended it, and said why
    assert stopped["status"] == "cancelled"
    assert "server stopped" in stopped["error"]["message"]
    with ws_connect(second, in_flight["id"]) as ws:
        replay = ws_until_final(ws)
    assert replay[-1]["status"] == "cancelled"
    assert [e["seq"] for e in replay] == list(range(1, len(replay) + 1))
    assert httpx.delete(f"{second.url}/api/runs/{in_flight['id']}").json()["status"] == "cancelled"


def test_a_run_in_flight_when_the_server_dies_is_failed_after_restart(server_factory, tmp_path):
    first = server_factory(tmp_path)
    with RunProcesses(first) as procs:
        run = first.start_run("crash", 2, {"how": "hang", "rank": 1})
        wait_for(lambda: sum(e["kind"] == "collective" for e in events(first, run["id"])) >= 5)
        recorded = events(first, run["id"])
        first.proc.kill()                                # no shutdown at all
        first.proc.wait()
    assert len(procs.seen) >= 3
    assert procs.left_behind() == []                     # the ranks died with the server

    second = server_factory(tmp_path)
    state = _state(second, run["id"])
    assert state["status"] == "failed"
    assert state["error"]["kind"] == "interrupted"
    replay = events(second, run["id"])
    assert replay[:len(recorded)] == recorded
    assert is_final(replay[-1]) and replay[-1]["status"] == "failed"     # the log says how it ended too
    assert replay[-1]["error"]["kind"] == "interrupted"
    assert [e["seq"] for e in replay] == list(range(1, len(replay) + 1))
    with ws_connect(second, run["id"]) as ws:
        assert ws_until_final(ws) == replay
    assert second.run("tp_mlp", 1)["status"] == "done"  # and the new server runs lessons
