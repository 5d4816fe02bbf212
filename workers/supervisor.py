"""One run's supervisor: forks the run's ranks, waits for them, stops them all at the first failure
or at the wall-clock limit, and reports how each one ended.

The supervisor leads a new session, so the run is one process group: the server stops a run with
`killpg(supervisor_pid, SIGKILL)`, which takes the supervisor and every rank at once. On Linux each
process also dies with its parent (PR_SET_PDEATHSIG), so no rank outlives the server.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
import tempfile

from workers.channel import EventChannel
from workers.launch_request import LaunchRequest
from workers.protocol import SupervisorReport

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (a no-op elsewhere). A spawned
    process calls it first thing; if the parent named in PARALAB_PARENT_PID is already gone (it
    died while this one was starting), it exits at once."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    expected = os.environ.get("PARALAB_PARENT_PID")
    if expected and os.getppid() != int(expected):
        os._exit(1)


class _TimeLimit(Exception):
    pass


def _on_alarm(signum, frame):
    raise _TimeLimit()


def supervise(request: LaunchRequest) -> None:
    """Fork mode: runs in the supervisor forked from the warm launcher; never returns."""
    from workers.rank import run_rank   # imported by the launcher already: costs nothing here

    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    die_with_parent()
    workdir = tempfile.mkdtemp(prefix=f"paralab-{request.run_id}-")
    store_path = os.path.join(workdir, "store")
    ranks: dict[int, int] = {}
    for rank in range(request.world_size):
        pid = os.fork()
        if pid == 0:
            die_with_parent()
            os._exit(run_rank(request, rank, store_path))
        ranks[pid] = rank
    finish(request, ranks, workdir)


def finish(request: LaunchRequest, ranks: dict[int, int], workdir: str) -> None:
    """Wait for the ranks (pid → rank), report how each ended, clean up and exit."""
    exits, timed_out = _wait_for(ranks, request.time_limit_s)
    try:
        channel = EventChannel(request.events_address, request.run_id, request.token, None)
        channel.send(SupervisorReport(exits=exits, timed_out=timed_out).to_dict())
        channel.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        os._exit(0)


def _wait_for(ranks: dict[int, int], time_limit_s: float) -> tuple[list[dict], bool]:
    """Reap every rank; after the first failure or at the time limit, SIGKILL the rest."""
    exits: list[dict] = []
    living = dict(ranks)
    killed: set[int] = set()   # stopped by this supervisor: their SIGKILL is not their own failure
    timed_out = False
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(time_limit_s, 0.01))
    try:
        while living:
            try:
                pid, status = os.waitpid(-1, 0)
            except _TimeLimit:
                timed_out = True
                killed.update(living)
                _kill(living)
                continue
            if pid not in living:
                continue
            exit_info = {"rank": living.pop(pid), "code": os.waitstatus_to_exitcode(status)}
            exit_info["stopped"] = pid in killed and exit_info["code"] == -signal.SIGKILL
            exits.append(exit_info)
            if exit_info["code"] != 0:
                killed.update(living)
                _kill(living)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return sorted(exits, key=lambda e: e["rank"]), timed_out


def _kill(living: dict[int, int]) -> None:
    for pid in living:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def start(request: LaunchRequest) -> int:
    """Fork the supervisor of one run from the warm launcher; returns its pid (= its process group)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.dup2(2, 1)   # stdout is the launcher's reply pipe: a rank's prints must never land there
        try:
            supervise(request)
        finally:
            os._exit(1)
    return pid

