"""Nothing a run or a judged job leaves stays a zombie, even where the server is pid 1 — a container's
command with no init (the Docker image run by hand, a Kubernetes pod): the server then serves from a child
and pid 1 reaps (app/as_init.py); the ranks of a killed run are the launcher's to reap besides
(workers/supervisor.py, `adopt_orphans`). The server runs here as pid 1 of a PID namespace of its own
(bubblewrap's `--as-pid-1`), and the tests read the process tree from outside it."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import Callable

import pytest

from tests import web
from tests.conftest import REPO, LiveServer, sandbox_available

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

PID_1 = ("bwrap", "--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--as-pid-1", "--die-with-parent")
SLEEPER = "import time\ntime.sleep(60)\n"


def children(pid: int) -> dict[int, str]:
    """Each child of `pid` with its state (`S`, `R`, `Z` for a zombie…)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
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


def command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:      # ended meanwhile
        return b""


def settles(condition: Callable[[], bool], what: Callable[[], str], timeout: float = 10) -> None:
    """Wait until `condition()` holds; past `timeout` seconds, fail saying `what()`."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what()
        time.sleep(0.1)


class Pid1:
    """The tree: bwrap (outside) → pid 1 → the server → its launcher, …"""

    def __init__(self, live: LiveServer):
        self.live = live
        (self.init,) = children(live.proc.pid)
        self.launcher = next(pid for pid in descendants(self.init) if b"workers.launcher" in command_line(pid))

    def orphans(self) -> dict[int, str]:
        """The zombies among pid 1's children: processes orphaned, then never reaped. (A zombie whose
        own parent lives is that parent's to reap: the warm checker's last check, until its next.)"""
        return {pid: state for pid, state in children(self.init).items() if state.startswith("Z")}


def start(tmp_path) -> Pid1:
    if not sandbox_available():
        pytest.skip("bubblewrap cannot make namespaces here")
    return Pid1(LiveServer(tmp_path, prefix=PID_1).start())


@pytest.fixture(scope="module")
def pid_1(tmp_path_factory):
    tree = start(tmp_path_factory.mktemp("pid-1"))
    yield tree
    tree.live.stop()


def test_a_cancelled_runs_ranks_are_reaped_under_a_server_that_is_pid_1(pid_1):
    for _ in range(2):
        run = pid_1.live.start_run("script", 2, {"source": SLEEPER})
        settles(lambda: len(descendants(pid_1.launcher)) >= 3, lambda: "the run's processes did not start", 60)
        assert web.delete(f"{pid_1.live.url}/api/runs/{run['id']}", timeout=60).status_code == 200
        assert pid_1.live.wait_run(run["id"])["status"] == "cancelled"
    settles(lambda: not descendants(pid_1.launcher) and not pid_1.orphans(),
            lambda: f"left: under the launcher {descendants(pid_1.launcher)}, under pid 1 {pid_1.orphans()}")


def test_a_judged_jobs_sandbox_is_reaped_under_a_server_that_is_pid_1(pid_1):
    starter = (REPO / "workers" / "problems" / "fg_operators" / "starter.py").read_text()
    for _ in range(2):
        verdict = web.post(f"{pid_1.live.url}/api/problems/fg_operators/judge", json={"code": starter}, timeout=120)
        assert verdict.json()["status"] == "failed"          # the starter computes nothing yet
    settles(lambda: not pid_1.orphans(), lambda: f"zombies under pid 1 (pid: state): {pid_1.orphans()}")


def test_pid_1_passes_sigterm_to_the_server_and_ends_with_it(tmp_path):
    tree = start(tmp_path)
    os.kill(tree.init, signal.SIGTERM)
    # bwrap ends with pid 1, pid 1 with the server's own status: uvicorn, after shutting down, ends by the
    # signal it was sent (128 + 15), as a server that is not pid 1 does
    assert tree.live.proc.wait(30) == 128 + signal.SIGTERM
