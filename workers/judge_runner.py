"""Inside the sandbox: run one problem's harness with the learner's code on fresh gloo ranks.

`python -m workers.judge_runner PROBLEM SUBMISSION CONTROL_FD RANK_FD…` — the fds are pipes the judge
made outside the sandbox. The runner forks the ranks first; each rank closes every pipe but its own
and only then loads the learner's module, runs the harness and writes its report (its outputs and
traced calls, workers/problems/report.py; with its protocol events, workers/judge_events.py) to its
own pipe. The runner itself never loads learner
code: it waits for the ranks and writes how each ended to the control pipe, with the bytes the kernel
counted on the sandbox's loopback while they ran (their real traffic, which no rank can lower).
Nothing printed counts.

A deadlock is caught early: each rank marks in a page shared with the runner how many calls it has
open and when it last began or ended one; when every running rank sits inside a call and nothing
has moved for STALL_S (or RUN_S is over), the runner asks the ranks still running (SIGUSR1, taken by
a thread the rank started before loading learner code) to write what they traced so far — each call
begun and ended, with the learner's line — to their pipe, then kills them.
"""

from __future__ import annotations

import ctypes
import importlib
import mmap
import struct
import threading
import importlib.util
import json
import os
import signal
import sys
import tempfile
import time
import traceback
from datetime import timedelta

from workers import warm  # noqa: F401  (environment for gloo; imports torch)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from workers import comm  # noqa: E402
from workers.lab import Lab  # noqa: E402
from workers.judge_events import EventKeeper  # noqa: E402
from workers.problems import PROBLEMS  # noqa: E402
from workers.problems.report import encode  # noqa: E402
from workers.tracer import Tracer  # noqa: E402
from workers.dispatch_trace import register_kernels  # noqa: E402  (once, not in each rank)

HANG_S = 30                        # one collective or send/recv waiting longer fails (gloo's timeout)
RUN_S = 75                         # the ranks' whole run (a loaded machine runs 1F1B's ranks for 40 s)
STALL_S = 6.0                      # every running rank inside a call and none begun or ended for this long
DUMP_S = 2.0                       # a hung rank's time to write its trace before it is killed
MAX_TRACE = 2048                   # events a report keeps (the last ones)
SLOT = struct.Struct("dd")         # per rank in the shared page: calls open, time of the last begin/end
MESSAGE_CHARS = 300                # of a learner's exception message
PR_SET_DUMPABLE = 4


def _not_dumpable() -> None:
    """No other process of the same user may open this one's /proc/PID/fd (the pipes) or ptrace it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def learner_trace(exc: BaseException, path: str) -> str:
    """Only the exception's type, its message (bounded) and the learner's own line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    where = f" (your line {frames[-1].lineno}: {(frames[-1].line or '')[:120]})" if frames else ""
    message = str(exc)
    if len(message) > MESSAGE_CHARS:
        message = message[:MESSAGE_CHARS] + "…"
    return f"{type(exc).__name__}: {message}{where}"


def _load(path: str):
    spec = importlib.util.spec_from_file_location("submission", path)
    submission = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(submission)
    return submission


class Progress:
    """The page the ranks and the runner share (made before the fork): per rank, how many traced
    calls it has open and when it last began or ended one. Learner code can write it too; the worst
    it can do is get its own run judged hung."""

    def __init__(self, world: int):
        self.world, self.page = world, mmap.mmap(-1, SLOT.size * world)
        for rank in range(world):
            self.set(rank, 0, time.monotonic())

    def set(self, rank: int, open_calls: int, when: float) -> None:
        SLOT.pack_into(self.page, rank * SLOT.size, open_calls, when)

    def stalled(self, running: list[int], now: float) -> bool:
        slots = [SLOT.unpack_from(self.page, rank * SLOT.size) for rank in running]
        return bool(slots) and all(open_calls > 0 for open_calls, _ in slots) \
            and now - max(when for _, when in slots) > STALL_S


def learner_line(path: str) -> int | None:
    """The line of the learner's file the current call was made from."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != path:
        frame = frame.f_back
    return frame.f_lineno if frame is not None else None


def traced(message: dict, line: int | None) -> dict:
    keep = ("kind", "phase", "group", "ranks", "cseq", "op", "shape", "peer", "tag")
    return {**{k: message[k] for k in keep if message.get(k) is not None}, "line": line}


def _dump_when_asked(report_fd: int, calls: list[dict], trace: list[dict], kept: EventKeeper,
                     reported: threading.Event) -> None:
    """A thread of the rank: on the runner's SIGUSR1 (blocked in every other thread), write the
    report of a hung rank — what it traced so far — unless it has reported already, and end the process."""
    signal.sigwait({signal.SIGUSR1})
    if not reported.is_set():
        _write_all(report_fd, encode({}, calls, trace=list(trace), hung=True, events=list(kept.events)))
    os._exit(0)


def rank_main(problem_id: str, path: str, rank: int, world: int, workdir: str, report_fd: int,
              progress: Progress, start: float) -> None:
    """`start`: the runner's clock reading before it forked the ranks, the one zero of every rank's `t`."""
    torch.set_num_threads(1)
    calls: list[dict] = []
    trace: list[dict] = []
    kept = EventKeeper()
    open_calls = 0
    reported = threading.Event()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    threading.Thread(target=_dump_when_asked, args=(report_fd, calls, trace, kept, reported), daemon=True).start()

    def emit(message: dict) -> None:
        nonlocal open_calls
        kept.add(message)
        if message.get("kind") not in ("collective", "p2p"):
            return
        begin = message.get("phase") == "begin"
        if begin:
            calls.append(message)
        open_calls += 1 if begin else -1
        progress.set(rank, max(open_calls, 0), time.monotonic())
        trace.append(traced(message, learner_line(path)))
        if len(trace) > MAX_TRACE:
            del trace[0]

    tracer = Tracer(emit, rank, lambda: time.monotonic() - start)
    stage = "loading"
    try:
        store = dist.FileStore(os.path.join(workdir, "store"), world)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timedelta(seconds=HANG_S))
        tracer.install()
        comm.use_tracer(tracer)
        harness = importlib.import_module(f"workers.problems.{problem_id}.harness")
        submission = _load(path)
        stage = "running"
        report = encode(harness.run(Lab(tracer, rank, world, torch.device("cpu")), submission), calls, trace=trace,
                        events=kept.events)
    except Exception as exc:
        prefix = "your code raised while loading: " if stage == "loading" else ""
        report = encode({}, calls, error=prefix + learner_trace(exc, path), trace=trace, events=kept.events)
        stage = "raised"
    reported.set()
    _write_all(report_fd, report)
    if stage == "running":
        _wait_for_peers(rank, progress)
    os._exit(0)


def _wait_for_peers(rank: int, progress: Progress) -> None:
    """A rank that finished waits for the others before it closes its connections (as a lesson's rank
    does), so that a peer still waiting for it reads as a deadlock, not as "connection closed by
    peer"; for the runner it waits inside a call."""
    progress.set(rank, 1, time.monotonic())
    try:
        dist.barrier()
    except Exception:              # a peer that raised and left, or gloo's timeout: the verdict is elsewhere
        pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)


def loopback_bytes() -> int | None:
    """Bytes sent on the loopback so far, as the kernel counts them (/proc/net/dev): in the sandbox's
    own network namespace that is the ranks' traffic and nothing else. None where unreadable."""
    try:
        with open("/proc/net/dev") as table:
            for line in table:
                name, _, counters = line.partition(":")
                if name.strip() == "lo":
                    return int(counters.split()[8])
    except (OSError, ValueError, IndexError):
        pass
    return None


def main(problem_id: str, path: str, control_fd: int, report_fds: list[int]) -> None:
    _not_dumpable()                                  # inherited by the ranks
    world = PROBLEMS[problem_id].world_size
    importlib.import_module(f"workers.problems.{problem_id}.harness")   # once, not in each rank (1F1B's: 1 CPU-s)
    register_kernels()   # the dispatch level's, once before the forks too
    workdir = tempfile.mkdtemp(prefix="judge-")
    before = loopback_bytes()
    progress = Progress(world)
    start = time.monotonic()
    pids = {}
    for rank in range(world):
        pid = os.fork()
        if pid == 0:
            for fd in [control_fd, *report_fds[:rank], *report_fds[rank + 1:]]:
                os.close(fd)
            rank_main(problem_id, path, rank, world, workdir, report_fds[rank], progress, start)
        pids[pid] = rank
    for fd in report_fds:
        os.close(fd)
    exits, hung, stalled = _wait(pids, progress)
    after = loopback_bytes()
    wire = after - before if before is not None and after is not None else None
    _write_all(control_fd, json.dumps({"exits": exits, "hung": hung, "hang_s": RUN_S, "stall_s": STALL_S,
                                       "stalled": stalled, "wire_bytes": wire}).encode())


def _wait(pids: dict[int, int], progress: Progress) -> tuple[dict[int, int], list[int], bool]:
    """Each rank's exit code (−signal when killed), the ranks found hung — still alive after RUN_S,
    or all waiting inside calls with nothing moving for STALL_S (then `stalled`) — which were asked
    for their trace and killed."""
    deadline = time.monotonic() + RUN_S
    exits: dict[int, int] = {}
    stalled = False
    while len(exits) < len(pids) and time.monotonic() < deadline:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid in pids:
            exits[pids[pid]] = os.waitstatus_to_exitcode(status)
        elif not pid:
            stalled = progress.stalled([r for r in pids.values() if r not in exits], time.monotonic())
            if stalled:
                break
            time.sleep(0.05)
    hung = sorted(rank for pid, rank in pids.items() if rank not in exits)
    _ask_for_traces({pid: rank for pid, rank in pids.items() if rank in hung})
    return exits, hung, stalled


def _ask_for_traces(hung: dict[int, int]) -> None:
    """SIGUSR1 to each hung rank, DUMP_S for them to write their trace, then SIGKILL to the rest."""
    for pid in hung:
        os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + DUMP_S
    left = dict(hung)
    while left and time.monotonic() < deadline:
        pid, _ = os.waitpid(-1, os.WNOHANG)
        if pid in left:
            del left[pid]
        elif not pid:
            time.sleep(0.01)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), [int(fd) for fd in sys.argv[4:]])
