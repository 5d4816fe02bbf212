"""Tracing overhead: the same run through the same warm launcher, traced and untraced.

Times each run from the launch request to the supervisor's report that every rank has exited
(the ranks' whole life: fork, process group, program, exit), alternating traced and untraced runs:
the tp_mlp lesson at its default sizes and a larger block, then programs run as a user's own
(the script lesson) on torch's parallel APIs, traced at the dispatch level: the playground's FSDP2
and DTensor examples and the bigger FSDP2 and DTensor programs of bench/programs/. Prints the
medians and the ratio (budget: traced / untraced ≤ 1.25). Then the stricter measure of
bench/torch_api_overhead.py: the same bigger programs' steps in ranks already started.
Usage: python bench/tracing_overhead.py [--repeats 15] [--world-size 4] [--only SUBSTRING] [--no-steps]
                                        [--against CHECKOUT]
(--against: another checkout of paralab, e.g. main's from `git worktree add`: a launcher of each, their
runs alternating round by round, so both see the same load; the load average is printed with each line.)
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from workers.launch_request import LaunchRequest  # noqa: E402
from workers.protocol import frame_length  # noqa: E402

EXAMPLES = REPO / "workers" / "lessons" / "script" / "examples"
PROGRAMS = REPO / "bench" / "programs"


def script(path: Path) -> dict:
    return {"source": path.read_text(), "filename": path.name}


WORKLOADS = {   # name: (lesson, params)
    "tp_mlp default (S=8, H=16, FFN=64)": ("tp_mlp", {}),
    "tp_mlp larger (S=256, H=256, FFN=1024)": ("tp_mlp", {"seq_len": 256, "hidden": 256, "ffn": 1024}),
    "script: the playground's FSDP2 example": ("script", script(EXAMPLES / "fsdp2.py")),
    "script: the playground's DTensor example": ("script", script(EXAMPLES / "tensor_parallel.py")),
    "script: FSDP2, 4 × Linear(256), 5 steps": ("script", script(PROGRAMS / "fsdp2_train.py")),
    "script: DTensor MLP 256 → 1024 → 256, 5 steps": ("script", script(PROGRAMS / "dtensor_tp.py")),
}


class EventSink:
    """Accepts the ranks' event connections and signals when a run's supervisor reports."""

    def __init__(self):
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self._server.getsockname()[1]
        self.reported: dict[str, threading.Event] = {}
        self.events: dict[str, int] = {}
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            conn, _ = self._server.accept()
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn):
        with conn, conn.makefile("rb") as stream:
            run_id = json.loads(stream.readline())["hello"]
            for line in stream:
                message = json.loads(line)
                if (length := frame_length(message)) is not None:   # a blob's raw values follow its line
                    stream.read(length)
                self.events[run_id] = self.events.get(run_id, 0) + 1
                if "supervisor" in message:
                    assert all(e["code"] == 0 for e in message["exits"]), message
                    self.reported[run_id].set()


def run_once(launcher, sink: EventSink, run_id: str, world_size: int, lesson: str, params: dict, trace: bool) -> float:
    sink.reported[run_id] = threading.Event()
    request = LaunchRequest(run_id=run_id, token="bench", lesson=lesson, world_size=world_size,
                            events_address=sink.address, t0=time.monotonic(), time_limit_s=60,
                            params=params, trace=trace)
    start = time.perf_counter()
    launcher.stdin.write(json.dumps({"launch": request.to_json()}) + "\n")
    launcher.stdin.flush()
    launcher.stdout.readline()
    if not sink.reported[run_id].wait(60):
        raise TimeoutError(run_id)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--world-size", type=int, default=4)
    parser.add_argument("--only", default="", help="only the workloads whose name holds this")
    parser.add_argument("--no-steps", action="store_true", help="skip bench/torch_api_overhead.py")
    parser.add_argument("--against", type=Path, help="another checkout, measured alternately with this one")
    args = parser.parse_args()
    sink = EventSink()
    checkouts = [REPO] + ([args.against.resolve()] if args.against else [])
    launchers = {c: subprocess.Popen([sys.executable, "-m", "workers.launcher"], cwd=c, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE) for c in checkouts}
    for launcher in launchers.values():
        launcher.stdout.readline()   # ready
    try:
        for w, (name, (lesson, params)) in enumerate(WORKLOADS.items()):
            if args.only not in name:
                continue
            load = os.getloadavg()[0]
            times = {(c, trace): [] for c in checkouts for trace in (True, False)}
            for c in checkouts:
                run_once(launchers[c], sink, f"warm-{w}-{checkouts.index(c)}", args.world_size, lesson, params, True)
            for i in range(args.repeats):
                order = list(times) if i % 2 == 0 else list(times)[::-1]   # no order bias
                for c, trace in order:
                    run_id = f"r{w}-{i}-{checkouts.index(c)}-{trace}"
                    times[c, trace].append(run_once(launchers[c], sink, run_id, args.world_size, lesson, params, trace))
            for c in checkouts:
                traced, plain = statistics.median(times[c, True]), statistics.median(times[c, False])
                print(f"{name}, {args.world_size} ranks{'' if c == REPO else f' ({c})'}: traced median "
                      f"{traced * 1000:.1f} ms, untraced {plain * 1000:.1f} ms, ratio {traced / plain:.3f} "
                      f"(budget ≤ 1.25; load {load:.1f} → {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for launcher in launchers.values():
            launcher.stdin.close()
            launcher.wait()
    if not args.no_steps:
        subprocess.run([sys.executable, str(REPO / "bench" / "torch_api_overhead.py"), "--world-size", "2"], check=True)


if __name__ == "__main__":
    main()
