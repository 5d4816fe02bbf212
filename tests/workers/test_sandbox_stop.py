"""A judged job stopped is gone, not dying, when its caller is told so; and what it left in its process
group is killed while the group's id is still its leader's pid alone."""

from __future__ import annotations

import os
import subprocess
import threading
import uuid
from pathlib import Path

import pytest

from tests.app.helpers import Proc, processes, wait_for
from workers import sandbox

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")

# Three processes holding 1 GiB each: when the job is stopped the kernel takes a while to free their
# memory, and the sandbox's PID namespace init ends only after them.
HOLDERS = """
import os, time
for _ in range(2):
    if os.fork() == 0:
        break
held = bytearray(1 << 30)
time.sleep(3600)
"""


def test_a_stopped_jobs_processes_have_all_ended_when_the_sandbox_returns():
    marker = uuid.uuid4().hex
    stop = threading.Event()
    held: list[Proc] = []

    def stop_once_held() -> None:
        try:
            held.extend(wait_for(lambda: len(found := _holding(marker)) == 3 and found, 60))
        finally:
            stop.set()

    holding = threading.Thread(target=stop_once_held)
    holding.start()
    outcome = sandbox.run(["python3", "/job/job.py", marker], {"job.py": HOLDERS.encode()},
                          sandbox.Limits(job_memory_mb=8192), stop=stop)
    holding.join()
    assert len(held) == 3 and outcome.reason == sandbox.CANCELLED, outcome
    assert _living(marker) == []


def test_what_a_job_leaves_in_its_group_is_killed_before_the_job_is_reaped(monkeypatch):
    """A job that ends by itself leaving a process in its group: the group is killed while the job's
    leader is still unreaped (a zombie), so its pid, which names the group, cannot yet be a new
    process's."""
    process = subprocess.Popen(["sh", "-c", "sleep 300 & echo $!"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    left = int(process.stdout.readline())
    leader_states = []
    kill_group = os.killpg

    def killpg(pgid, sig):
        leader_states.append(_state(process.pid))
        kill_group(pgid, sig)

    monkeypatch.setattr(sandbox.os, "killpg", killpg)
    outcome = sandbox.supervise(process, sandbox.Limits(), None)
    assert outcome.returncode == 0 and outcome.reason is None, outcome
    assert leader_states == ["Z"]
    assert wait_for(lambda: _state(left) in ("", "Z"), 10), f"the process the job left lives on: {_state(left)}"


def _state(pid: int) -> str:
    """A process's state letter ("Z": ended, not yet reaped); empty once it is gone."""
    stat = _read(Path(f"/proc/{pid}/stat")).decode()
    return stat[stat.rindex(")") + 2] if stat else ""


def _job(marker: str) -> list[Proc]:
    """The job's processes, bwrap's included: those whose command line holds the marker."""
    return [p for p in processes().values() if marker.encode() in _read(Path(f"/proc/{p.pid}/cmdline"))]


def _holding(marker: str) -> list[Proc]:
    """The job's processes that hold their gibibyte."""
    return [p for p in _job(marker) if _rss_kib(_read(Path(f"/proc/{p.pid}/status"))) > 1 << 20]


def _living(marker: str) -> list[Proc]:
    return [p for p in _job(marker) if p.living]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _rss_kib(status: bytes) -> int:
    return int(status.split(b"VmRSS:")[1].split()[0]) if b"VmRSS:" in status else 0
