"""A rank that raises, exits or segfaults fails the run and names the rank; a run past its time limit
fails with `timeout`; cancel works by DELETE and by websocket; and no process is ever left behind."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests import web
from tests.app.helpers import RunProcesses, events, is_final, ws_connect, ws_receive, ws_until_final, wait_for

CRASH_PROGRAM = Path(__file__).resolve().parents[1] / "lessons_extra" / "crash" / "program.py"
SITE = "tests/lessons_extra/crash/program.py"


def line_of(text: str) -> int:
    """The line of the crash lesson that contains `text`."""
    for number, line in enumerate(CRASH_PROGRAM.read_text().splitlines(), start=1):
        if text in line:
            return number
    raise LookupError(text)


def _failed_run(server, world_size: int, how: str, rank: int):
    with RunProcesses(server) as procs:
        run = server.run("crash", world_size, {"how": how, "rank": rank})
    # its ranks may die between two looks of a loaded machine's watch: they are in its session
    assert len(procs.supervisors()) == 1, procs.seen
    assert procs.left_behind() == []
    return run


@pytest.mark.parametrize("world_size, rank", [(2, 1), (4, 2), (1, 0)])
def test_a_rank_that_raises(server, world_size, rank):
    run = _failed_run(server, world_size, "raise", rank)
    assert run["status"] == "failed"
    error = run["error"]
    assert (error["kind"], error["rank"]) == ("crash", rank)
    assert error["message"] == f"rank {rank} raised ZeroDivisionError: rank went dividing by zero on purpose"
    assert error["site"] == f"{SITE}:{line_of('raise ZeroDivisionError')}"
    assert "Traceback (most recent call last)" in error["traceback"]
    assert f'{SITE}", line {line_of("raise ZeroDivisionError")}' in error["traceback"]
    got = events(server, run["id"])
    assert is_final(got[-1]) and got[-1]["error"] == error
    [logged] = [e for e in got if e["kind"] == "log" and e.get("level") == "error" and e["rank"] == rank]
    assert logged["site"] == error["site"]


@pytest.mark.parametrize("how, says", [("exit", "exited with status 3"), ("segfault", "was killed by SIGSEGV")])
def test_a_rank_that_dies(server, how, says):
    run = _failed_run(server, 2, how, 1)
    assert run["status"] == "failed"
    error = run["error"]
    assert (error["kind"], error["rank"], error["message"]) == ("crash", 1, f"rank 1 {says}")
    assert error["site"] == f"{SITE}:{line_of('a first all-reduce')}"    # the last place it was seen


def test_the_server_goes_on_after_a_crash(server):
    _failed_run(server, 2, "segfault", 0)
    run = server.run("crash", 2, {"how": "none"})
    assert run["status"] == "done" and run["error"] is None


def test_a_rank_printing_to_stdout_cannot_confuse_the_launcher(server):
    """Ranks are forked from the launcher, whose stdout carries its replies to the server: a lesson's
    print (even one that looks like a reply) goes to stderr, and the next run is still the one killed."""
    assert server.run("crash", 2, {"how": "print", "rank": 0})["status"] == "done"
    test_cancel_by_delete(server)


def _wait_running(server, run_id: str, world_size: int) -> None:
    """Until every rank has reached the lesson (its first collective has begun)."""
    wait_for(lambda: {e["rank"] for e in events(server, run_id) if e["kind"] == "collective"} >= set(range(world_size)))


def test_cancel_by_delete(server):
    with RunProcesses(server) as procs:
        run = server.start_run("crash", 2, {"how": "hang", "rank": 1})
        _wait_running(server, run["id"], 2)
        assert len(procs.left_behind(timeout=0)) == 3             # the watch sees the live supervisor and ranks
        response = web.delete(f"{server.url}/api/runs/{run['id']}")
        assert response.status_code == 200
        assert response.json()["status"] == "cancelled"
        assert response.json()["error"]["kind"] == "cancelled"
    assert len(procs.seen) >= 3
    assert procs.left_behind() == []
    final = server.wait_run(run["id"], timeout=5)
    assert final["status"] == "cancelled"
    got = events(server, run["id"])
    assert is_final(got[-1]) and got[-1]["status"] == "cancelled"
    assert [e for e in got if is_final(e)] == [got[-1]]                # ended once


def test_cancel_by_websocket(server):
    with RunProcesses(server) as procs:
        run = server.start_run("crash", 2, {"how": "hang", "rank": 0})
        _wait_running(server, run["id"], 2)
        with ws_connect(server, run["id"]) as ws:
            ws.send('{"op": "cancel"}')
            got = ws_until_final(ws)
    assert got[-1]["status"] == "cancelled"
    assert [e["seq"] for e in got] == list(range(1, len(got) + 1))
    assert len(procs.seen) >= 3
    assert procs.left_behind() == []
    assert server.wait_run(run["id"], timeout=5)["status"] == "cancelled"


def test_cancel_while_queued_or_starting(server):
    """Cancelled straight after creation, before or while its ranks start."""
    with RunProcesses(server) as procs:
        run = server.start_run("crash", 2, {"how": "hang"})
        response = web.delete(f"{server.url}/api/runs/{run['id']}")
        assert response.json()["status"] == "cancelled"
        time.sleep(0.5)                                                 # a launch in flight must not revive it
    assert procs.left_behind() == []
    assert server.wait_run(run["id"], timeout=5)["status"] == "cancelled"
    assert sum(is_final(e) for e in events(server, run["id"])) == 1


def test_a_run_past_its_time_limit_fails_with_timeout(limited_server):
    start = time.monotonic()
    with RunProcesses(limited_server) as procs:
        run = limited_server.run("crash", 2, {"how": "hang", "rank": 1})
    elapsed = time.monotonic() - start
    assert run["status"] == "failed"
    error = run["error"]
    assert error["kind"] == "timeout"
    assert "3 s" in error["message"]
    assert error["ranks"] == {"0": f"{SITE}:{line_of('a second all-reduce')}",
                              "1": f"{SITE}:{line_of('a first all-reduce')}"}
    assert 3 <= elapsed < 15                                  # the limit, not the 60 s default
    assert len(procs.seen) >= 3
    assert procs.left_behind() == []


def test_bad_control_messages_get_an_error_and_the_run_goes_on(server):
    run = server.start_run("crash", 1, {"how": "hang", "rank": 0})
    try:
        _wait_running(server, run["id"], 1)
        with ws_connect(server, run["id"], since=1_000_000) as ws:
            for text, says in [("not json", '"op"'), ('{"no": "op"}', '"op"'), ("[1, 2]", '"op"'),
                               ('{"op": "explode"}', "explode"), ("x" * 5000, "too large")]:
                ws.send(text)
                assert says in ws_receive(ws)["error"]
        assert web.get(f"{server.url}/api/runs/{run['id']}").json()["status"] == "running"
    finally:
        web.delete(f"{server.url}/api/runs/{run['id']}")


def test_runs_queue_beyond_the_concurrency_limit_and_a_full_queue_is_a_503(limited_server):
    server = limited_server                                   # one run at a time, one queued at most
    with RunProcesses(server) as procs:
        # a step-mode run nobody steps holds the slot until cancelled (the 3 s limit is a plain run's):
        # however slow the machine, the slot is still taken while the queue is looked at
        running = server.start_run("crash", 2, {"how": "none"}, step=True)
        wait_for(lambda: {e["rank"] for e in events(server, running["id"])
                          if e["kind"] == "gate" and e["phase"] == "waiting"} >= {0, 1})
        queued = server.start_run("crash", 1, {"how": "none"})
        assert queued["status"] == "queued"
        assert [(e["kind"], e["status"], e["position"]) for e in events(server, queued["id"])] == [("run", "queued", 1)]
        full = web.post(f"{server.url}/api/runs", json={"lesson": "tp_mlp", "world_size": 1})
        assert full.status_code == 503
        assert "queued" in full.json()["detail"]
        time.sleep(0.3)
        assert web.get(f"{server.url}/api/runs/{queued['id']}").json()["status"] == "queued"
        web.delete(f"{server.url}/api/runs/{running['id']}")
        assert server.wait_run(queued["id"], timeout=10)["status"] == "done"   # its turn came
    assert procs.left_behind() == []
