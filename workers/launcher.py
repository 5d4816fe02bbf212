"""The warm launcher: a process that has imported torch and the lessons once, then forks a fresh set
of rank processes for each run, so no run pays torch's import and no run reuses another's process.

Protocol on stdin/stdout, one JSON object per line:
    → {"launch": <LaunchRequest>}        ← {"run_id": …, "pid": <supervisor pid = process group>}
    ← {"ready": true, "torch": …, "devices": n}  once, at start

The server starts it as `python -m workers.launcher` and stops it by closing stdin.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")   # count GPUs without touching CUDA
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo" if sys.platform.startswith("linux") else "lo0")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402  the whole point: imported once, before any fork

from workers import supervisor  # noqa: E402
from workers.launch_request import LaunchRequest  # noqa: E402
from workers.lessons import LESSONS  # noqa: E402


def _warm_up() -> None:
    torch.set_num_threads(1)
    import workers.rank  # noqa: F401
    for lesson in LESSONS.values():
        importlib.import_module(lesson.program_module)


def _reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    supervisor.die_with_parent()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # supervisors are reaped automatically
    _warm_up()
    devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    _reply({"ready": True, "torch": torch.__version__, "devices": devices})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = LaunchRequest.from_json(json.loads(line)["launch"])
            _reply({"run_id": request.run_id, "pid": supervisor.start(request)})
        except Exception as exc:  # a bad request must not take the launcher down
            _reply({"error": f"{type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    main()
