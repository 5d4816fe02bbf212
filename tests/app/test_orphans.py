"""Nothing a run or a judged job leaves stays a zombie, even where the server is pid 1 — a container's
command with no init (the Docker image run by hand, a Kubernetes pod): the server then serves from a child
and pid 1 reaps (app/as_init.py). The server runs here as pid 1 of a PID namespace of its own (bubblewrap's
`--as-pid-1`), and the tests read the process tree from outside it."""

from __future__ import annotations

import os
import shutil
import signal

import pytest

from tests import web
from tests.app.helpers import descendants, launcher_pid, processes, wait_for
from tests.conftest import REPO, LiveServer, sandbox_available

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

PID_1 = ("bwrap", "--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--as-pid-1", "--die-with-parent")
SLEEPER = "import time\ntime.sleep(60)\n"


class Pid1:
    """The tree: bwrap (outside) → pid 1 → the server → its launcher, …"""

    def __init__(self, live: LiveServer):
        self.live = live
        (self.init,) = self.children(live.proc.pid)
        served_by = self.children(self.init)
        assert len(served_by) == 1, f"pid 1 serves from one child (app/as_init.py), not itself: its children {served_by}"
        self.server = served_by[0]
        self.launcher = launcher_pid(live, parent=self.server)

    @staticmethod
    def children(pid: int) -> list[int]:
        return [p.pid for p in processes().values() if p.ppid == pid]

    def orphans(self) -> list[int]:
        """The zombies among pid 1's children: processes orphaned, then never reaped. (A zombie whose
        own parent lives is that parent's to reap: the warm checker's last check, until its next.)"""
        return [p.pid for p in processes().values() if p.ppid == self.init and not p.living]

    def left_by_runs(self) -> list[int]:
        return [p.pid for p in descendants(self.launcher, processes())]


def start(tmp_path) -> Pid1:
    if not sandbox_available():
        pytest.skip("bubblewrap cannot make namespaces here")
    return Pid1(LiveServer(tmp_path, prefix=PID_1).start())


@pytest.fixture(scope="module")
def pid_1(tmp_path_factory):
    tree = start(tmp_path_factory.mktemp("pid-1"))
    yield tree
    tree.live.stop()


def settles(condition, what) -> None:
    """Wait until `condition()` holds; past 10 s, fail saying `what()`."""
    try:
        wait_for(condition, timeout=10, interval=0.1)
    except TimeoutError:
        pytest.fail(what())


def test_a_cancelled_runs_ranks_are_reaped_under_a_server_that_is_pid_1(pid_1):
    for _ in range(2):
        run = pid_1.live.start_run("script", 2, {"source": SLEEPER})
        wait_for(lambda: len(pid_1.left_by_runs()) >= 3, timeout=60)      # the supervisor and its two ranks
        assert web.delete(f"{pid_1.live.url}/api/runs/{run['id']}", timeout=60).status_code == 200
        assert pid_1.live.wait_run(run["id"])["status"] == "cancelled"
    settles(lambda: not pid_1.left_by_runs() and not pid_1.orphans(),
            lambda: f"left: under the launcher {pid_1.left_by_runs()}, zombies under pid 1 {pid_1.orphans()}")


def test_a_judged_jobs_sandbox_is_reaped_under_a_server_that_is_pid_1(pid_1):
    starter = (REPO / "workers" / "problems" / "fg_operators" / "starter.py").read_text()
    for _ in range(2):
        verdict = web.post(f"{pid_1.live.url}/api/problems/fg_operators/judge", json={"code": starter}, timeout=120)
        assert verdict.json()["status"] == "failed"          # the starter computes nothing yet
    settles(lambda: not pid_1.orphans(), lambda: f"zombies under pid 1: {pid_1.orphans()}")


def test_pid_1_passes_sigterm_to_the_server_and_ends_with_it(tmp_path):
    tree = start(tmp_path)
    os.kill(tree.init, signal.SIGTERM)
    # bwrap ends with pid 1, pid 1 with the server's own status: uvicorn, after shutting down, ends by the
    # signal it was sent (128 + 15), as a server that is not pid 1 does
    assert tree.live.proc.wait(30) == 128 + signal.SIGTERM
