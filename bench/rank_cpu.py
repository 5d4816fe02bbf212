"""The CPU a traced run costs its ranks: programs run as a user's own (the script lesson) through the warm
launcher, traced and untraced, alternating, each rank's CPU time read as it ends.

On a busy machine a whole run's wall-clock swings 2-4× from one run to the next (bench/tracing_overhead.py
measures it); the CPU its ranks spend moves far less, and on two cores shared by the ranks a run's wall-clock
follows it. Prints, per checkout, the medians of the run's wall-clock, of its ranks' CPU (all their threads)
and of rank 0's main thread's CPU, traced and untraced, their ratios, the CPU tracing added, and the load.
Usage: python bench/rank_cpu.py [--repeats 10] [--world-size 2] [--only SUBSTRING] [--against CHECKOUT]
(--against: another checkout of paralab, e.g. main's: its launcher's runs alternate with this one's.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from tracing_overhead import WORKLOADS, EventSink, run_once  # noqa: E402

# The launcher, each script rank writing its CPU times to $PARALAB_BENCH_CPU/<run id>-<rank> as it ends
# (run from the checkout measured: its own workers package).
_LAUNCHER = """
import os, runpy, sys, time
sys.path.insert(0, os.getcwd())
import workers.script_rank as script_rank
run_rank = script_rank.run_rank
def timed_rank(request, rank, store_path):
    status = run_rank(request, rank, store_path)
    with open(os.path.join(os.environ["PARALAB_BENCH_CPU"], f"{request.run_id}-{rank}"), "w") as f:
        f.write(f"{time.process_time()} {time.thread_time()}")
    return status
script_rank.run_rank = timed_rank
runpy.run_module("workers.launcher", run_name="__main__")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--only", default="FSDP2, 4", help="the script workloads whose name holds this")
    parser.add_argument("--against", type=Path, help="another checkout, measured alternately with this one")
    args = parser.parse_args()
    cpu_dir = tempfile.mkdtemp(prefix="paralab-rank-cpu-")
    sink = EventSink()
    checkouts = [REPO] + ([args.against.resolve()] if args.against else [])
    launchers = {c: subprocess.Popen([sys.executable, "-c", _LAUNCHER], cwd=c, text=True, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env={**os.environ, "PARALAB_BENCH_CPU": cpu_dir})
                 for c in checkouts}
    for launcher in launchers.values():
        launcher.stdout.readline()   # ready
    try:
        for w, (name, (lesson, params)) in enumerate(WORKLOADS.items()):
            if lesson == "script" and args.only in name:
                measure(name, params, w, args, checkouts, launchers, sink, cpu_dir)
    finally:
        for launcher in launchers.values():
            launcher.stdin.close()
            launcher.wait()


def measure(name, params, w, args, checkouts, launchers, sink, cpu_dir) -> None:
    load = os.getloadavg()[0]
    runs = {(c, trace): [] for c in checkouts for trace in (True, False)}   # (wall s, ranks' CPU s, main thread's)
    for c in checkouts:
        run_once(launchers[c], sink, f"cpu-warm-{w}-{checkouts.index(c)}", args.world_size, "script", params, True)
    for i in range(args.repeats):
        for c, trace in (list(runs) if i % 2 == 0 else list(runs)[::-1]):   # no order bias
            run_id = f"cpu-{w}-{i}-{checkouts.index(c)}-{trace}"
            wall = run_once(launchers[c], sink, run_id, args.world_size, "script", params, trace)
            cpu = [[float(x) for x in Path(cpu_dir, f"{run_id}-{r}").read_text().split()] for r in range(args.world_size)]
            runs[c, trace].append((wall, sum(process for process, _ in cpu), cpu[0][1]))
    for c in checkouts:
        traced, plain = ([statistics.median(m) for m in zip(*runs[c, trace])] for trace in (True, False))
        print(f"{name}, {args.world_size} ranks{'' if c == checkouts[0] else f' ({c})'}, load {load:.1f} → "
              f"{os.getloadavg()[0]:.1f}: wall {traced[0] * 1e3:.0f} / {plain[0] * 1e3:.0f} ms ({traced[0] / plain[0]:.2f}), "
              f"ranks' CPU {traced[1] * 1e3:.0f} / {plain[1] * 1e3:.0f} ms ({traced[1] / plain[1]:.2f}, "
              f"+{(traced[1] - plain[1]) * 1e3:.0f} ms), rank 0's main thread {traced[2] * 1e3:.0f} / "
              f"{plain[2] * 1e3:.0f} ms ({traced[2] / plain[2]:.2f})", flush=True)


if __name__ == "__main__":
    main()
