"""Spawn mode (the macOS start method, forced here with PARALAB_START_METHOD=spawn): the same runs,
on standby ranks spawned ahead of time instead of forked from the warm launcher. `spawn_server`:
tests/conftest.py."""

import os
import time

import pytest

from tests import web


def _slot_processes(server) -> list[int]:
    """The warm slot and standby ranks the server started (found by its tag in their environment)."""
    tag = f"SPAWN_TEST_TAG={server.env['SPAWN_TEST_TAG']}".encode()
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if (b"workers.standby" in cmdline or b"workers.slot" in cmdline) and tag in environ:
            pids.append(int(entry))
    return pids


def finished(server, lesson: str, world: int, params: dict | None = None) -> dict:
    """A run to its end: a standby imports torch before it runs, which takes minutes on loaded cores."""
    return server.wait_run(server.start_run(lesson, world, params)["id"], timeout=240)


@pytest.mark.timeout(900)          # the spawn server's start and three runs, each spawning ranks
def test_spawn_mode_runs_lessons_reports_crashes_and_cleans_up(spawn_server):
    health = web.get(spawn_server.url + "/healthz").json()
    assert health["launcher"] == "ready"

    run = finished(spawn_server, "tp_mlp", 2)
    assert run["status"] == "done", run["error"]
    assert len(run["checks"]) == 8 and all(c["passed"] for c in run["checks"])

    bigger = finished(spawn_server, "sp_mlp", 4)   # more ranks than the slot keeps warm
    assert bigger["status"] == "done" and all(c["passed"] for c in bigger["checks"]), bigger["error"]

    crashed = finished(spawn_server, "crash", 2, {"how": "raise", "rank": 1})
    assert crashed["status"] == "failed"
    assert crashed["error"]["kind"] == "crash" and crashed["error"]["rank"] == 1
    assert "ZeroDivisionError" in crashed["error"]["message"]

    assert _slot_processes(spawn_server), "the server keeps no slot warm"
    spawn_server.stop()   # the server's end takes the launcher, its warm slot and standbys along
    deadline = time.monotonic() + 10
    while _slot_processes(spawn_server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _slot_processes(spawn_server) == []
