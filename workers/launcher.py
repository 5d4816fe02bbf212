"""The warm launcher: a process that has imported torch once, then forks a fresh set of rank processes
for each run, so no run pays torch's import and no run reuses another's process. A lesson's program is
imported here at the lesson's first run, before its ranks are forked (workers/warm.py).
Where forking after importing torch is unsafe (macOS; or PARALAB_START_METHOD=spawn), it keeps a
slot of spawned standby ranks warm instead (workers/slot.py).

Protocol on stdin/stdout, one JSON object per line; every request carries an `id` and its reply
the same `id`, so a reply can never be taken for another request's:
    → {"id": n, "launch": <LaunchRequest>}     ← {"id": n, "run_id": …, "pid": <supervisor pid = process group>}
    → {"id": n, "check": {"lesson", "world_size", "params"}}   ← {"id": n, "problems": [[field, message], …]}
    → {"id": n, "choices": lesson}             ← {"id": n, "choices": {field: [values]}}   values only torch knows
    ← {"id": n, "error": "…"}                  a request that failed; the launcher goes on
    ← {"ready": true, "torch": …, "devices": n, "start_method": …}  once, at start
A reply is at most MAX_REPLY_BYTES long (a longer one is replaced by an error saying so).

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


MAX_REPLY_BYTES = 64 * 1024


def _reply(message: dict) -> None:
    line = json.dumps(message)
    if len(line) > MAX_REPLY_BYTES:
        line = json.dumps({"id": message.get("id"), "error": f"the reply was too large ({len(line)} bytes)"})
    sys.stdout.write(line + "\n")
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
    _reply({"ready": True, "torch": warm.torch.__version__, "devices": warm.device_count(),
            "start_method": method})
    for line in sys.stdin:
        if not line.strip():
            continue
        request_id = None
        try:
            message = json.loads(line)
            request_id = message.get("id")
            if "check" in message:
                _reply({"id": request_id, "problems": _check(**message["check"])})
                continue
            if "choices" in message:
                _reply({"id": request_id, "choices": LESSONS[message["choices"]].runtime_choices()})
                continue
            request = LaunchRequest.from_json(message["launch"])
            if method == "fork":
                warm.load(LESSONS[request.lesson])
            _reply({"id": request_id, "run_id": request.run_id, "pid": start(request)})
        except Exception as exc:  # a bad request must not take the launcher down
            _reply({"id": request_id, "error": f"{type(exc).__name__}: {str(exc)[:2000]}"})


def _check(lesson: str, world_size: int, params: dict) -> list[tuple[str, str]]:
    """A lesson's torch-side rules, for the server's validation (it does not import torch)."""
    entry = LESSONS[lesson]
    return entry.runtime_problems(entry.validate(params, world_size), world_size)


if __name__ == "__main__":
    main()
