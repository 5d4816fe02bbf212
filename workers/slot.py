"""A run slot, for spawn mode (macOS, where forking a process that has imported torch is unsafe).

A slot is a small process without torch. It leads a new session (so, as in fork mode, the run is
one process group that `killpg` stops at once), keeps standby ranks warm as its own children
(`python -m workers.standby`: fresh interpreters that have imported torch), and, given one launch
request, hands each rank to a standby and supervises them as the fork-mode supervisor does.
The warm launcher keeps one slot ready ahead of the next run; a slot serves one run only.

    python -m workers.slot STANDBYS     ← {"ready": true}     → {"launch": <LaunchRequest>}
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

from workers import supervisor
from workers.launch_request import LaunchRequest


def _spawn(module: str, *args: str, stderr=None) -> subprocess.Popen:
    """A child interpreter that dies with this process (it checks PARALAB_PARENT_PID as it starts)."""
    return subprocess.Popen([sys.executable, "-m", module, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=stderr, text=True, env={**os.environ, "PARALAB_PARENT_PID": str(os.getpid())})


def _standby() -> subprocess.Popen:
    """A standby's stderr (where its rank prints, once assigned) is a pipe this slot reads."""
    return _spawn("workers.standby", stderr=subprocess.PIPE)


def _wait_ready(standbys: list[subprocess.Popen]) -> None:
    for standby in standbys:
        if standby.stdout.readline().strip() != "ready":
            raise RuntimeError(f"standby {standby.pid} failed to start")


def main() -> None:
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)   # the launcher ignores SIGCHLD; exec kept that
    supervisor.die_with_parent()
    standbys = [_standby() for _ in range(int(sys.argv[1]))]
    _wait_ready(standbys)
    print(json.dumps({"ready": True}), flush=True)
    line = sys.stdin.readline()
    if not line:
        return   # the launcher closed: the standbys die with us
    request = LaunchRequest.from_json(json.loads(line)["launch"])
    extra = [_standby() for _ in range(request.world_size - len(standbys))]
    _wait_ready(extra)
    standbys += extra
    workdir = tempfile.mkdtemp(prefix=f"paralab-{request.run_id}-")
    job = {"request": request.to_json(), "store": os.path.join(workdir, "store")}
    ranks, outputs = {}, {}
    for rank, standby in enumerate(standbys[: request.world_size]):
        outputs[rank] = supervisor.OutputTail(os.dup(standby.stderr.fileno()), request.output_bytes)
        standby.stderr.close()
        standby.stdin.write(json.dumps({**job, "rank": rank}) + "\n")
        standby.stdin.flush()
        ranks[standby.pid] = rank
    for spare in standbys[request.world_size:]:
        spare.stdin.close()   # a spare exits on end of input
    supervisor.finish(request, ranks, workdir, outputs)


class SlotPool:
    """The launcher's side: one slot kept warm ahead of each run."""

    def __init__(self, standbys: int):
        self._standbys = standbys
        self._next = self._start()
        self._next_ready = self._wait_for_slot()   # the launcher is ready once a slot is

    def _wait_for_slot(self) -> bool:
        if self._next.stdout.readline().strip() == "":
            raise RuntimeError("a warm slot exited while starting")
        return True

    def _start(self) -> subprocess.Popen:
        return _spawn("workers.slot", str(self._standbys))

    def launch(self, request: LaunchRequest) -> int:
        if not self._next_ready:
            self._wait_for_slot()
        slot = self._next
        slot.stdin.write(json.dumps({"launch": request.to_json()}) + "\n")
        slot.stdin.close()
        self._next, self._next_ready = self._start(), False
        return slot.pid


if __name__ == "__main__":
    main()
