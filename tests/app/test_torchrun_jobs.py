"""`paralab trace -- torchrun …` on one node, with real torchrun ranks: the job shows as a live run,
and when the server is killed in the middle the job runs to the end anyway, each rank saying how many
events it dropped. Two nodes feeding one run, and its page: tests/browser/test_torchrun_job.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests import web
from tests.conftest import REPO

JOB = REPO / "tests" / "app" / "jobs" / "ring_job.py"


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.1)
    raise TimeoutError(f"waited {timeout:g} s for {what}")


def all_reduces_ended(url: str) -> list[dict] | None:
    runs = [r for r in web.get(f"{url}/api/runs").json() if r["lesson"] == "torchrun"]
    if not runs:
        return None
    log = [json.loads(line) for line in web.get(f"{url}/api/runs/{runs[0]['id']}/events").text.splitlines()]
    ended = [e for e in log if e["kind"] == "collective" and e["op"] == "all_reduce" and e["phase"] == "end"]
    return log if len(ended) == 2 else None


@pytest.mark.slow
@pytest.mark.timeout(400)          # a server of its own and torchrun: a minute and more on two loaded cores
def test_a_job_runs_on_when_its_server_is_killed_and_says_what_it_dropped(server_factory, tmp_path):
    live = server_factory()
    hold = tmp_path / "go-on"
    job = subprocess.Popen(
        [sys.executable, "-m", "app", "trace", "--server", live.url, "--",
         "torchrun", "--standalone", "--nproc-per-node=2", str(JOB)],
        cwd=REPO, env={**os.environ, "JOB_HOLD_FILE": str(hold)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        log = wait_for(lambda: all_reduces_ended(live.url), 150, "both ranks' all_reduce on the server")
        assert [e["status"] for e in log if e["kind"] == "run"] == ["running"]      # live: the job goes on
        live.stop()                                                                   # the server goes away
        hold.touch()
        out, err = job.communicate(timeout=150)
    finally:
        job.kill()
    assert job.returncode == 0, err
    assert "rank 0 of 2: all done" in out and "rank 1 of 2: all done" in out    # (two ranks' lines may interleave)
    for rank in (0, 1):
        said = [line for line in err.splitlines() if line.startswith(f"paralab: rank {rank} dropped ")]
        assert said, err
        dropped, total = (int(n) for n in said[0].split("dropped ")[1].split(" events")[0].split(" of "))
        assert 0 < dropped < total        # what came before the kill was sent; the send/recv and after, dropped
