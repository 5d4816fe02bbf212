"""Inside the sandbox: run one problem's harness with the learner's code on fresh gloo ranks.

`python -m workers.judge_runner PROBLEM SUBMISSION CONTROL_FD RANK_FD…` — the fds are pipes the judge
made outside the sandbox. The runner forks the ranks first; each rank closes every pipe but its own
and only then loads the learner's module, runs the harness and writes its report (its outputs and
traced calls, workers/problems/report.py) to its own pipe. The runner itself never loads learner
code: it waits for the ranks and writes how each ended to the control pipe, with the bytes the kernel
counted on the sandbox's loopback while they ran (their real traffic, which no rank can lower).
Nothing printed counts.
"""

from __future__ import annotations

import ctypes
import importlib
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
from workers.problems import PROBLEMS  # noqa: E402
from workers.problems.report import encode  # noqa: E402
from workers.tracer import Tracer  # noqa: E402

HANG_S = 30                        # one collective or send/recv waiting longer fails (gloo's timeout)
RUN_S = 75                         # the ranks' whole run (a loaded machine runs 1F1B's ranks for 40 s)
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


def rank_main(problem_id: str, path: str, rank: int, world: int, workdir: str, report_fd: int) -> None:
    torch.set_num_threads(1)
    calls: list[dict] = []

    def emit(message: dict) -> None:
        if message.get("kind") in ("collective", "p2p") and message.get("phase") == "begin":
            calls.append(message)

    start = time.monotonic()
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
        report = encode(harness.run(Lab(tracer, rank, world, torch.device("cpu")), submission), calls)
    except Exception as exc:
        prefix = "your code raised while loading: " if stage == "loading" else ""
        report = encode({}, calls, error=prefix + learner_trace(exc, path))
    _write_all(report_fd, report)
    os._exit(0)


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
    workdir = tempfile.mkdtemp(prefix="judge-")
    before = loopback_bytes()
    pids = {}
    for rank in range(world):
        pid = os.fork()
        if pid == 0:
            for fd in [control_fd, *report_fds[:rank], *report_fds[rank + 1:]]:
                os.close(fd)
            rank_main(problem_id, path, rank, world, workdir, report_fds[rank])
        pids[pid] = rank
    for fd in report_fds:
        os.close(fd)
    exits, hung = _wait(pids)
    after = loopback_bytes()
    wire = after - before if before is not None and after is not None else None
    _write_all(control_fd, json.dumps({"exits": exits, "hung": hung, "hang_s": RUN_S, "wire_bytes": wire}).encode())


def _wait(pids: dict[int, int]) -> tuple[dict[int, int], list[int]]:
    """Each rank's exit code (−signal when killed); the ranks still alive after RUN_S are killed and
    listed."""
    deadline = time.monotonic() + RUN_S
    exits = {}
    while len(exits) < len(pids) and time.monotonic() < deadline:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid in pids:
            exits[pids[pid]] = os.waitstatus_to_exitcode(status)
        elif not pid:
            time.sleep(0.01)
    hung = sorted(rank for pid, rank in pids.items() if rank not in exits)
    for pid, rank in pids.items():
        if rank in hung:
            os.kill(pid, signal.SIGKILL)
    return exits, hung


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), [int(fd) for fd in sys.argv[4:]])
