"""A standby rank (spawn mode): a fresh interpreter that imports torch and the lessons ahead of
time, says `ready`, then waits for one assignment `{"request", "rank", "store"}` on stdin and runs
that one rank. Used once, never reused."""

from __future__ import annotations

import json
import os
import sys

from workers.supervisor import die_with_parent

die_with_parent()     # before importing torch (seconds): the slot may go away meanwhile

from workers import warm  # noqa: E402
from workers.launch_request import LaunchRequest  # noqa: E402


def main() -> None:
    warm.warm_up(every_lesson=True)
    from workers.rank import run_rank

    print("ready", flush=True)
    os.dup2(2, 1)   # from now on the slot reads nothing from us: a lesson's prints go to stderr
    line = sys.stdin.readline()
    if not line:
        return   # the slot was closed before a run needed this rank
    job = json.loads(line)
    status = run_rank(LaunchRequest.from_json(job["request"]), job["rank"], job["store"])
    # End as a forked rank does (workers/supervisor.py), without the interpreter's teardown: a gloo thread
    # still freeing a finished work takes the GIL while Python finalizes, and the thread exit forced on it
    # unwinds through gloo's noexcept loop: "terminate called without an active exception", SIGABRT.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    main()
