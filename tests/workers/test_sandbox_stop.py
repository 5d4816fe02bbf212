"""A judged job stopped is gone, not dying, when its caller is told so."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest

from tests.app.helpers import wait_for
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
    held: list[Path] = []

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


def _processes(marker: str):
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            cmdline = (stat.parent / "cmdline").read_bytes()
            text = stat.read_text()
        except OSError:
            continue
        if marker.encode() in cmdline:
            yield stat.parent, text[text.rindex(")") + 2]


def _holding(marker: str) -> list[Path]:
    """The job's processes that hold their gibibyte."""
    return [proc for proc, _ in _processes(marker)
            if "VmRSS" in (status := _read(proc / "status")) and _rss_kib(status) > 1 << 20]


def _living(marker: str) -> list[str]:
    return [f"{proc.name} ({state})" for proc, state in _processes(marker) if state not in "ZX"]


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _rss_kib(status: str) -> int:
    return int(status.split("VmRSS:")[1].split()[0])
