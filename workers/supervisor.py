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
import threading
import traceback

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
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    die_with_parent()
    if request.sandboxed:               # a hosted-lab user's own program: its ranks start in the sandbox
        from workers.sandboxed_run import supervise_sandboxed
        supervise_sandboxed(request)
    workdir = tempfile.mkdtemp(prefix=f"paralab-{request.run_id}-")
    store_path = os.path.join(workdir, "store")
    ranks: dict[int, int] = {}
    outputs: dict[int, int] = {}
    for rank in (range(request.world_size) if request.ranks is None else request.ranks):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            os.dup2(write_end, 1)   # the rank's prints, and Python's own last words, go to its pipe
            os.dup2(write_end, 2)
            os.close(write_end)
            die_with_parent()
            os._exit(_rank_status(request, rank, store_path))
        os.close(write_end)
        ranks[pid], outputs[rank] = rank, read_end
    finish(request, ranks, workdir, {rank: OutputTail(fd, request.output_bytes) for rank, fd in outputs.items()})


def _rank_status(request: LaunchRequest, rank: int, store_path: str) -> int:
    """Run one rank; its exit status. What it raised before it could report on its channel (connecting
    to the server, say) goes to its output, which the run shows, instead of vanishing with the process."""
    from workers.rank import run_rank   # imported by the launcher already: costs nothing here
    try:
        return run_rank(request, rank, store_path)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        return 1


class OutputTail:
    """One rank's output, read from its pipe as it comes (a rank never blocks on a full pipe): only
    the last `keep` bytes are held, the rest counted. A rank that prints a gigabyte costs nothing."""

    def __init__(self, fd: int, keep: int):
        self.fd, self.keep = fd, keep
        self.total = 0
        self._tail = bytearray()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self.total += len(chunk)
                self._tail += chunk
                if len(self._tail) > self.keep:
                    del self._tail[: len(self._tail) - self.keep]
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def report(self, rank: int) -> dict | None:
        """{"rank", "bytes": all it printed, "tail": the last `keep` bytes as text}; None if silent."""
        self._thread.join(timeout=1.0)     # the rank has exited: what is left in the pipe is short
        if self.total == 0:
            return None
        return {"rank": rank, "bytes": self.total, "tail": bytes(self._tail).decode("utf-8", "replace")}


def finish(request: LaunchRequest, ranks: dict[int, int], workdir: str,
           outputs: dict[int, OutputTail] | None = None) -> None:
    """Wait for the ranks (pid → rank), report how each ended and the tail of what each printed,
    clean up and exit."""
    exits, timed_out = _wait_for(ranks, request.time_limit_s)
    try:
        output = [tail for rank, out in sorted((outputs or {}).items()) if (tail := out.report(rank))]
        channel = EventChannel(request.events_address, request.run_id, request.token, None)
        channel.send(SupervisorReport(exits=exits, timed_out=timed_out, output=output, node=request.node or None).to_dict())
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
    """Fork the supervisor of one run from the warm launcher; returns its pid (= its process group),
    once the supervisor leads that group: a cancel right after the reply must find the group to kill."""
    sys.stdout.flush()
    sys.stderr.flush()
    led, leading = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(led)
        try:
            os.setsid()
            os.close(leading)
            os.dup2(2, 1)   # stdout is the launcher's reply pipe: a rank's prints must never land there
            supervise(request)
        finally:
            os._exit(1)
    os.close(leading)
    os.read(led, 1)         # end of file: the supervisor has called setsid (or died)
    os.close(led)
    return pid

