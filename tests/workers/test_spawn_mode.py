"""Spawn mode (the macOS start method, forced here with PARALAB_START_METHOD=spawn): the same runs,
on standby ranks spawned ahead of time instead of forked from the warm launcher."""

import os
import time

import httpx
import pytest


@pytest.fixture
def spawn_server(server_factory, tmp_path):
    return server_factory(tmp_path, env={"PARALAB_START_METHOD": "spawn", "PARALAB_STANDBY_RANKS": "2"})


def _slot_processes() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, ValueError):
            continue
        if b"workers.standby" in cmdline or b"workers.slot" in cmdline:
            pids.append(int(entry))
    return pids


def test_spawn_mode_runs_lessons_reports_crashes_and_cleans_up(spawn_server):
    health = httpx.get(spawn_server.url + "/healthz").json()
    assert health["launcher"] == "ready"

    run = spawn_server.run("tp_mlp", 2)
    assert run["status"] == "done", run["error"]
    assert len(run["checks"]) == 8 and all(c["passed"] for c in run["checks"])

    bigger = spawn_server.run("sp_mlp", 4)   # more ranks than the slot keeps warm
    assert bigger["status"] == "done" and all(c["passed"] for c in bigger["checks"])

    crashed = spawn_server.run("crash", 2, {"how": "raise", "rank": 1})
    assert crashed["status"] == "failed"
    assert crashed["error"]["kind"] == "crash" and crashed["error"]["rank"] == 1
    assert "ZeroDivisionError" in crashed["error"]["message"]

    spawn_server.stop()   # the server's end takes the launcher, its warm slot and standbys along
    deadline = time.monotonic() + 10
    while _slot_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _slot_processes() == []
