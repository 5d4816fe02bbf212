"""A cancelled run leaves no process behind, even where the server is pid 1 — as in the Docker image,
whose command is the server, with no init: the ranks of a run, killed with their supervisor, are the
launcher's to reap (workers/supervisor.py, `adopt_orphans`), not pid 1's. Here the server runs as pid 1
of a PID namespace of its own (bubblewrap's `--as-pid-1`), and the test reads the process tree from
outside it."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from tests.conftest import LiveServer, sandbox_available
from tests import web

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

PID_1 = ("bwrap", "--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--as-pid-1", "--die-with-parent")
SLEEPER = "import time\ntime.sleep(60)\n"


def children(pid: int) -> dict[int, str]:
    """Each child of `pid` with its state (`S`, `R`, `Z` for a zombie…)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            state, ppid = stat.rsplit(")", 1)[1].split()[:2]
            if int(ppid) == pid:
                found[int(entry)] = state
    return found


def descendants(pid: int) -> dict[int, str]:
    found = children(pid)
    for child in list(found):
        found.update(descendants(child))
    return found


@pytest.fixture
def pid_1_server(tmp_path):
    if not sandbox_available():
        pytest.skip("bubblewrap cannot make namespaces here")
    live = LiveServer(tmp_path, prefix=PID_1).start()
    yield live
    live.stop()


def test_a_cancelled_runs_ranks_leave_no_zombie_under_a_server_that_is_pid_1(pid_1_server):
    (server_pid,) = children(pid_1_server.proc.pid)        # bwrap's one child: the server, pid 1 inside
    (launcher_pid,) = children(server_pid)
    for _ in range(2):
        run = pid_1_server.start_run("script", 2, {"source": SLEEPER})
        deadline = time.monotonic() + 60
        while len(descendants(launcher_pid)) < 3:           # the supervisor and its two ranks
            assert time.monotonic() < deadline, "the run's processes did not start"
            time.sleep(0.05)
        assert web.delete(f"{pid_1_server.url}/api/runs/{run['id']}", timeout=60).status_code == 200
        assert pid_1_server.wait_run(run["id"])["status"] == "cancelled"
    deadline = time.monotonic() + 10
    while left := {pid: state for pid, state in descendants(server_pid).items() if pid != launcher_pid}:
        assert time.monotonic() < deadline, f"left behind under the server (pid: state): {left}"
        time.sleep(0.1)
