"""Inside the sandbox: run one problem's harness with the learner's code on fresh gloo ranks, and
print every rank's checks as JSON lines (`{"check": …}` or `{"error": …}`) for the judge outside."""

from __future__ import annotations

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
from workers.tracer import Tracer  # noqa: E402

HANG_S = 30


def _learner_trace(exc: BaseException, path: str) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    where = f" (your line {frames[-1].lineno}: {frames[-1].line})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def rank_main(problem_id: str, submission, path: str, rank: int, world: int, workdir: str) -> None:
    torch.set_num_threads(1)
    results, calls = [], []

    def emit(message: dict) -> None:
        if message.get("kind") in ("collective", "p2p"):
            calls.append(message)
        elif message.get("kind") == "check":
            results.append({key: value for key, value in message.items() if key != "tensors"})

    start = time.monotonic()
    tracer = Tracer(emit, rank, lambda: time.monotonic() - start)
    store = dist.FileStore(os.path.join(workdir, "store"), world)
    try:
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timedelta(seconds=HANG_S))
        tracer.install()
        comm.use_tracer(tracer)
        harness = importlib.import_module(f"workers.problems.{problem_id}.harness")
        harness.run(Lab(tracer, rank, world, torch.device("cpu")), submission, calls)
    except Exception as exc:
        results.append({"kind": "error", "rank": rank, "message": _learner_trace(exc, path)})
    with open(os.path.join(workdir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
    os._exit(0)


def main(problem_id: str, path: str) -> None:
    problem = PROBLEMS[problem_id]
    spec = importlib.util.spec_from_file_location("submission", path)
    submission = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(submission)
    except Exception as exc:
        print(json.dumps({"error": f"your code raised while loading: {_learner_trace(exc, path)}"}))
        return
    workdir = tempfile.mkdtemp(prefix="judge-")
    pids = []
    for rank in range(problem.world_size):
        pid = os.fork()
        if pid == 0:
            rank_main(problem_id, submission, path, rank, problem.world_size, workdir)
        pids.append(pid)
    if not _wait(pids):
        print(json.dumps({"error": f"the ranks did not finish within {HANG_S} s — are they waiting for "
                                   "each other (a deadlock: a call some rank never makes)?"}))
        return
    for rank in range(problem.world_size):
        try:
            with open(os.path.join(workdir, f"rank{rank}.json")) as f:
                for result in json.load(f):
                    print(json.dumps(result))
        except FileNotFoundError:
            print(json.dumps({"error": f"rank {rank} ended without reporting (killed?)"}))


def _wait(pids: list[int]) -> bool:
    deadline = time.monotonic() + HANG_S + 5
    living = set(pids)
    while living and time.monotonic() < deadline:
        pid, _ = os.waitpid(-1, os.WNOHANG)
        if pid:
            living.discard(pid)
        else:
            time.sleep(0.01)
    for pid in living:
        os.kill(pid, signal.SIGKILL)
    return not living


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
