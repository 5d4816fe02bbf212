"""Limits on what one user's runs may hold (issue #10, points 8 and 9), on a live hosted lab with
real ranks: the run quota holds against requests sent together; a user has one step-mode run at a
time, and a step-mode run nobody drives is ended; control messages are rate-limited; a run whose
supervisor dies fails saying so; and when the launcher dies the server says so and starts it again."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import httpx
import pytest
from websockets.sync.client import connect

from tests import web
from tests.app.helpers import RunProcesses, client, launcher_pid, wait_for
from tests.conftest import LiveServer

ADMIN = {"name": "admin", "password": "admin-secret-1"}
BOB = ("bob", "bob-pass-1")
IDLE_S = 4


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("paralab-limits"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": ADMIN["password"], "PARALAB_MAX_RUNS_PER_USER": "2",
        "PARALAB_MAX_STEP_RUNS_PER_USER": "1", "PARALAB_STEP_IDLE_LIMIT_S": str(IDLE_S),
        "PARALAB_CONTROL_RATE_PER_S": "5"}).start()
    with client(live, **ADMIN) as admin:
        assert admin.post("/api/admin/users", json={"name": BOB[0], "password": BOB[1]}).status_code == 201
    yield live
    live.stop()


@pytest.fixture
def bob(lab):
    with client(lab, *BOB) as c:
        yield c
    with client(lab, **ADMIN) as admin:                      # leave no run of bob's in flight
        for run in admin.get("/api/admin/activity").json()["runs"]:
            admin.delete(f"/api/runs/{run['id']}")


def _cookie(c: httpx.Client) -> str:
    return "; ".join(f"{k}={v}" for k, v in c.cookies.items())


def _status(c: httpx.Client, run_id: str) -> dict:
    return c.get(f"/api/runs/{run_id}").json()


def _wait_waiting(c: httpx.Client, run_id: str, world_size: int = 2) -> None:
    """Until every rank waits at its first gate: then the log grows no more until a step is said."""
    def ranks_waiting() -> bool:
        events = map(json.loads, c.get(f"/api/runs/{run_id}/events").text.splitlines())
        return len({e["rank"] for e in events if e.get("phase") == "waiting"}) == world_size
    wait_for(ranks_waiting, timeout=60)


def test_ten_runs_sent_together_against_a_quota_of_two_start_two(lab, bob):
    """Each request waits on the launcher's check (a pipeline schedule needs torch) between the
    quota's count and the run's creation: counting and reserving must still be one step."""
    async def together():
        async with httpx.AsyncClient(base_url=lab.url, cookies=dict(bob.cookies), timeout=60) as c:
            body = {"lesson": "pp", "world_size": 2, "params": {"schedule": "GPipe", "microbatches": 32, "delay_ms": 100}}
            return await asyncio.gather(*(c.post("/api/runs", json=body) for _ in range(10)))

    codes = sorted(r.status_code for r in asyncio.run(together()))
    assert codes == [201, 201] + [429] * 8
    assert len([r for r in bob.get("/api/runs").json() if r["status"] not in ("done", "failed", "cancelled")]) == 2


def test_a_user_has_one_step_mode_run_at_a_time(lab, bob):
    first = bob.post("/api/runs", json={"lesson": "tp_mlp", "world_size": 2, "step": True})
    assert first.status_code == 201
    second = bob.post("/api/runs", json={"lesson": "tp_mlp", "world_size": 2, "step": True})
    assert second.status_code == 429 and "step-mode runs" in second.json()["detail"]
    assert bob.post("/api/runs", json={"lesson": "tp_mlp", "world_size": 2}).status_code == 201   # free-running: yes


def test_a_step_mode_run_nobody_drives_is_ended_and_its_ranks_stopped(lab, bob):
    with RunProcesses(lab) as procs:
        run_id = bob.post("/api/runs", json={"lesson": "tp_mlp", "world_size": 2, "step": True}).json()["id"]
        _wait_waiting(bob, run_id)
        started = time.monotonic()
        ended = wait_for(lambda: (s := _status(bob, run_id))["status"] != "running" and s, timeout=IDLE_S + 20)
    assert ended["status"] == "failed" and ended["error"]["kind"] == "idle"
    assert f"for {IDLE_S} s" in ended["error"]["message"]
    assert time.monotonic() - started >= IDLE_S - 1
    assert procs.left_behind() == []


def test_a_flood_of_pause_and_continue_is_rate_limited(lab, bob):
    run_id = bob.post("/api/runs", json={"lesson": "tp_mlp", "world_size": 2, "step": True}).json()["id"]
    _wait_waiting(bob, run_id)
    before = len(bob.get(f"/api/runs/{run_id}/events").text.splitlines())
    refused = 0
    with connect(f"{lab.ws_url}/ws/runs/{run_id}?since=100000", additional_headers={"Cookie": _cookie(bob)},
                 open_timeout=10) as ws:
        for _ in range(100):
            ws.send(json.dumps({"op": "pause"}))
        try:
            while True:
                refused += "too many control messages" in json.loads(ws.recv(timeout=3)).get("error", "")
        except TimeoutError:
            pass
    assert refused >= 80                                     # a burst of 10, then 5 a second
    after = len(bob.get(f"/api/runs/{run_id}/events").text.splitlines())
    assert after - before <= 2                             # pausing a paused run again records nothing
    assert _status(bob, run_id)["status"] == "running"


def _supervisor_of(procs: RunProcesses) -> int:
    """The run's supervisor: the launcher's child that leads its own session."""
    return wait_for(lambda: next((p.pid for p in procs.seen.values()
                                  if p.ppid == procs.launcher and p.session == p.pid), None), timeout=30)


def test_a_run_whose_supervisor_dies_fails_saying_so(lab, bob):
    with RunProcesses(lab) as procs:
        run_id = bob.post("/api/runs", json={"lesson": "tp_mlp", "world_size": 2, "step": True}).json()["id"]
        _wait_waiting(bob, run_id)
        os.kill(_supervisor_of(procs), signal.SIGKILL)
        ended = wait_for(lambda: (s := _status(bob, run_id))["status"] != "running" and s, timeout=30)
    assert ended["status"] == "failed" and ended["error"]["kind"] == "supervisor"
    assert "supervisor" in ended["error"]["message"] and "died" in ended["error"]["message"]
    assert procs.left_behind() == []


def test_when_the_launcher_dies_healthz_says_so_and_it_is_started_again(lab, bob):
    old = launcher_pid(lab)
    os.kill(old, signal.SIGKILL)
    seen = set()

    def ready_again():
        state = web.get(f"{lab.url}/healthz").json()["launcher"]
        seen.add(state)
        try:
            return state == "ready" and launcher_pid(lab) != old
        except LookupError:     # the old one gone before the server has seen it go: "ready" a moment longer
            return False

    wait_for(ready_again, timeout=120, interval=0.05)
    assert seen & {"down", "starting"}                        # never "ready" while it was gone
    run = bob.post("/api/runs", json={"lesson": "tp_mlp", "world_size": 2}).json()
    assert wait_for(lambda: (s := _status(bob, run["id"]))["status"] in ("done", "failed") and s)["status"] == "done"
