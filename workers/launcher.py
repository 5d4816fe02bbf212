"""The warm launcher: a process that has imported torch and the lessons once, then forks a fresh set
of rank processes for each run, so no run pays torch's import and no run reuses another's process.
Where forking after importing torch is unsafe (macOS; or PARALAB_START_METHOD=spawn), it keeps a
slot of spawned standby ranks warm instead (workers/slot.py).

Protocol on stdin/stdout, one JSON object per line:
    → {"launch": <LaunchRequest>}        ← {"run_id": …, "pid": <supervisor pid = process group>}
    → {"check": {"lesson", "world_size", "params"}}   ← {"problems": [[field, message], …]}
    ← {"ready": true, "torch": …, "devices": n, "choices": {lesson: {field: [values]}}}  once, at start

The server starts it as `python -m workers.launcher` and stops it by closing stdin.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from workers import supervisor, warm
from workers.launch_request import LaunchRequest
from workers.lessons import LESSONS
from workers.slot import SlotPool


def _reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    supervisor.die_with_parent()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # supervisors are reaped automatically
    method = warm.start_method()
    if method == "fork":
        warm.warm_up()
        start = supervisor.start
    else:
        start = SlotPool(int(os.environ.get("PARALAB_STANDBY_RANKS", "4"))).launch
    choices = {lesson.id: lesson.runtime_choices() for lesson in LESSONS.values() if lesson.runtime_rules}
    _reply({"ready": True, "torch": warm.torch.__version__, "devices": warm.device_count(),
            "start_method": method, "choices": choices})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
            if "check" in message:
                _reply({"problems": _check(**message["check"])})
                continue
            request = LaunchRequest.from_json(message["launch"])
            _reply({"run_id": request.run_id, "pid": start(request)})
        except Exception as exc:  # a bad request must not take the launcher down
            _reply({"error": f"{type(exc).__name__}: {exc}"})


def _check(lesson: str, world_size: int, params: dict) -> list[tuple[str, str]]:
    """A lesson's torch-side rules, for the server's validation (it does not import torch)."""
    entry = LESSONS[lesson]
    return entry.runtime_problems(entry.validate(params, world_size), world_size)


if __name__ == "__main__":
    main()
