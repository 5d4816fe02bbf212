"""Tracing overhead: the same tp_mlp run through the same warm launcher, traced and untraced.

Times each run from the launch request to the supervisor's report that every rank has exited
(the ranks' whole life: fork, process group, lesson, exit), alternating traced and untraced runs,
for the lesson's default sizes and for a larger block. Prints the medians and the ratio
(budget: traced / untraced ≤ 1.25). Then the same for torch's own parallel APIs, traced at the
dispatch level: an FSDP2 program and a DTensor one (bench/torch_api_overhead.py).
Usage: python bench/tracing_overhead.py [--repeats 15] [--world-size 4]
"""

from __future__ import annotations

import argparse
import json
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

SIZES = {
    "default (S=8, H=16, FFN=64)": {},
    "larger (S=256, H=256, FFN=1024)": {"seq_len": 256, "hidden": 256, "ffn": 1024},
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


def run_once(launcher, sink: EventSink, run_id: str, world_size: int, params: dict, trace: bool) -> float:
    sink.reported[run_id] = threading.Event()
    request = LaunchRequest(run_id=run_id, token="bench", lesson="tp_mlp", world_size=world_size,
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
    args = parser.parse_args()
    sink = EventSink()
    launcher = subprocess.Popen([sys.executable, "-m", "workers.launcher"], cwd=REPO, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    launcher.stdout.readline()   # ready
    try:
        for name, params in SIZES.items():
            times = {True: [], False: []}
            run_once(launcher, sink, f"warm-{len(name)}", args.world_size, params, True)
            for i in range(args.repeats):
                for trace in ((True, False) if i % 2 == 0 else (False, True)):   # no order bias
                    times[trace].append(run_once(launcher, sink, f"r{len(name)}-{i}-{trace}", args.world_size, params, trace))
            traced, plain = statistics.median(times[True]), statistics.median(times[False])
            print(f"tp_mlp {name}, {args.world_size} ranks: traced median {traced * 1000:.1f} ms, "
                  f"untraced {plain * 1000:.1f} ms, ratio {traced / plain:.3f} (budget ≤ 1.25)")
    finally:
        launcher.stdin.close()
        launcher.wait()
    subprocess.run([sys.executable, str(REPO / "bench" / "torch_api_overhead.py"), "--world-size", "2"], check=True)


if __name__ == "__main__":
    main()
