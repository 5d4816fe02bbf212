"""What a warm process loads before any run: torch (one thread) and every lesson's program.

Imported first by the warm launcher (fork mode) and by each standby rank process (spawn mode).
"""

from __future__ import annotations

import importlib
import os
import sys

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")   # count GPUs without touching CUDA
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo" if sys.platform.startswith("linux") else "lo0")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from workers.lessons import LESSONS  # noqa: E402


def warm_up() -> None:
    torch.set_num_threads(1)
    import workers.rank  # noqa: F401
    from workers.dispatch_trace import register_kernels
    register_kernels()   # once here, before the forks: a traced rank's install then costs it nothing
    for lesson in LESSONS.values():
        # a lesson with a runner of its own (a user's script) has no program to import: its runner instead
        importlib.import_module(lesson.rank_runner or lesson.program_module)


def device_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def start_method() -> str:
    """`fork` where forking after importing torch is safe (Linux), else `spawn` (macOS)."""
    method = os.environ.get("PARALAB_START_METHOD") or ("fork" if sys.platform.startswith("linux") else "spawn")
    if method not in ("fork", "spawn"):
        raise ValueError(f"PARALAB_START_METHOD must be fork or spawn, not {method!r}")
    return method
