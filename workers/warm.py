"""What a warm process loads before any run: torch (one thread), the rank runtime, and lessons' programs.

Imported first by the warm launcher (fork mode) and by each standby rank process (spawn mode). A
standby runs one rank of a lesson it does not know ahead, so it loads every lesson's program; the
launcher loads a lesson's program at that lesson's first run, before it forks the ranks, so no rank
imports it and a server pays only for what it runs: torch's parallel APIs (DTensor, FSDP2,
pipelining), which the dtensor, fsdp2, pp and script lessons import, cost as much again as torch.
"""

from __future__ import annotations

import importlib
import os
import sys

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")   # count GPUs without touching CUDA
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo" if sys.platform.startswith("linux") else "lo0")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from workers.lessons import LESSONS, Lesson  # noqa: E402


def warm_up(every_lesson: bool = False) -> None:
    torch.set_num_threads(1)
    import workers.rank  # noqa: F401
    from workers.dispatch_trace import register_kernels
    register_kernels()   # once here, before the forks: a traced rank's install then costs it nothing
    if every_lesson:
        for lesson in LESSONS.values():
            load(lesson)


def load(lesson: Lesson) -> None:
    """The lesson's program imported (once: later calls find it in sys.modules). A lesson with a runner
    of its own (a user's script) has no program to import: its runner instead."""
    importlib.import_module(lesson.rank_runner or lesson.program_module)


def device_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def start_method() -> str:
    """`fork` where forking after importing torch is safe (Linux), else `spawn` (macOS)."""
    method = os.environ.get("PARALAB_START_METHOD") or ("fork" if sys.platform.startswith("linux") else "spawn")
    if method not in ("fork", "spawn"):
        raise ValueError(f"PARALAB_START_METHOD must be fork or spawn, not {method!r}")
    return method
