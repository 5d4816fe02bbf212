"""One rank of the corpus run: each program in turn, unchanged (as `python PROGRAM` under torchrun
would run it), traced by paralab's tracer and watched by torch's `CommDebugMode` at once.

Usage: python -m tests.workers.corpus.runner OUT_DIR PORT,PORT,… PROGRAM... (a port per program) (with RANK and WORLD_SIZE set).
Writes OUT_DIR/rank<R>.json: per program, the events, CommDebugMode's counts and what it printed.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import runpy
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
from torch.distributed.tensor.debug import CommDebugMode
from torch.utils._python_dispatch import TorchDispatchMode

from workers.tracer import Tracer


class CommCounts(CommDebugMode):
    """torch's CommDebugMode, counting as it does, without its per-module tracker (which fails on
    DDP's forward in torch 2.13: `parent_list` runs empty)."""

    def __enter__(self):
        self.comm_counts.clear()
        self.comm_module_counts.clear()
        self.comm_module_counts["Global"] = {"forward": defaultdict(int), "backward": defaultdict(int)}
        self.advanced_module_tracker.name = "Global"
        self.advanced_module_tracker.module_parents_dict["Global"] = set()
        TorchDispatchMode.__enter__(self)
        return self

    def __exit__(self, *args):
        TorchDispatchMode.__exit__(self, *args)


# Each program's globals, kept until the rank ends. Freeing a DDP model frees its reducer and then its
# gloo process group, whose destructor joins the backend's threads while holding the GIL; a thread that is
# freeing a finished work then waits for the GIL (to drop the CommDebugMode its thread-local state holds):
# the rank hangs. Kept, nothing is freed before `os._exit`.
KEPT: list[dict] = []


def run_program(path: Path, rank: int, port: int) -> dict:
    print(f"corpus rank {rank}: {path.name} on port {port}", file=sys.stderr, flush=True)
    os.environ["MASTER_PORT"] = str(port)
    events: list[dict] = []
    t0 = time.monotonic()
    tracer = Tracer(lambda m: events.append(m) if "kind" in m else None, rank, lambda: time.monotonic() - t0)
    printed = io.StringIO()
    sys.path.insert(0, str(path.parent))
    tracer.install()
    try:
        with CommCounts() as watcher, contextlib.redirect_stdout(printed):
            KEPT.append(runpy.run_path(str(path), run_name="__main__"))
    finally:
        tracer.uninstall()
        sys.path.remove(str(path.parent))
    counts = {str(op): n for op, n in watcher.get_comm_counts().items()}
    return {"events": events, "comm_debug_mode": counts, "printed": printed.getvalue()}


def main() -> None:
    out_dir, ports, programs = Path(sys.argv[1]), sys.argv[2].split(","), [Path(p) for p in sys.argv[3:]]
    rank = int(os.environ["RANK"])
    faulthandler.register(signal.SIGUSR1, all_threads=True)   # the test asks a hung rank where it is
    torch.set_num_threads(1)
    results = {p.stem: run_program(p, rank, int(port)) for p, port in zip(programs, ports)}
    (out_dir / f"rank{rank}.json").write_text(json.dumps(results))


if __name__ == "__main__":
    main()
    # As paralab's ranks end: not through torch's teardown (the process groups the programs left, their
    # DDP reducers), which can abort or hang a rank that has done its work.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
