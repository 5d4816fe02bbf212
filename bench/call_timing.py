"""Per-call times, traced against untraced: the same all-reduces on 2 real gloo ranks, each size
timed untraced (time.perf_counter right around `dist.all_reduce`, the tracer paused) and traced (the
`end` event's `duration`), alternating, so the two see the same machine.

The traced duration is taken around the original call only (previews and tensor copies are made
before and after it); goal ≤ 1.2× untraced for calls of 1 ms and more. A rank that enters a
collective first waits inside it for the others, so each call is counted by the rank that waited
least (the last to arrive: the collective itself), traced and untraced alike; rank 0's own times are
printed too, with its skew included. Prints, for each size, the medians and their ratio, the
tracer's work before the call (`begin`'s `t` to `t_call`) and the whole begin→end span (what the
page's span covers, previews included).
Usage: python bench/call_timing.py [--repeats 30] [--world-size 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SIZES = (32, 32 * 1024, 1024 * 1024, 8 * 1024 * 1024)   # bytes of float32


def _rank(rank: int, world: int, store_path: str, repeats: int, queue) -> None:
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    import torch
    import torch.distributed as dist

    from workers.tracer import Tracer

    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.FileStore(store_path, world), rank=rank, world_size=world,
                            timeout=timedelta(seconds=120))
    events = []
    t0 = time.monotonic()
    tracer = Tracer(events.append, rank, lambda: time.monotonic() - t0)
    tracer.install()
    rows = []
    for size in SIZES:
        x = torch.ones(size // 4)
        untraced, traced, span, before = [], [], [], []
        with tracer.paused():
            dist.all_reduce(x)   # warm-up
        for i in range(repeats):
            for trace in ((True, False) if i % 2 == 0 else (False, True)):
                if trace:
                    events.clear()
                    dist.all_reduce(x)
                    begin, end = [e for e in events if e.get("kind") == "collective"]
                    traced.append(end["duration"])
                    span.append(end["t"] - begin["t"])
                    before.append(end["t_call"] - begin["t"])
                else:
                    with tracer.paused():
                        start = time.perf_counter()
                        dist.all_reduce(x)
                        untraced.append(time.perf_counter() - start)
        rows.append((size, untraced, traced, span, before))
    tracer.uninstall()
    dist.destroy_process_group()
    queue.put((rank, rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--world-size", type=int, default=2)
    args = parser.parse_args()
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=_rank, args=(r, args.world_size, f"{tmp}/store", args.repeats, queue))
                 for r in range(args.world_size)]
        for proc in procs:
            proc.start()
        by_rank = dict(queue.get(timeout=600) for _ in procs)
        for proc in procs:
            proc.join()
    median_ms = lambda values: statistics.median(values) * 1000  # noqa: E731
    print(f"all_reduce on {args.world_size} gloo ranks, medians of {args.repeats} calls each (ms):")
    print(f"{'size':>11} | {'untraced':>8} {'traced':>8} {'ratio':>5} | rank 0: {'untraced':>8} {'traced':>8} "
          f"{'ratio':>5} | {'before':>7} {'span':>8}")
    for i, size in enumerate(SIZES):
        per_rank = [by_rank[r][i] for r in sorted(by_rank)]
        plain = [min(calls) for calls in zip(*(row[1] for row in per_rank))]     # the last to arrive
        traced = [min(calls) for calls in zip(*(row[2] for row in per_rank))]
        _, plain0, traced0, span0, before0 = per_rank[0]
        print(f"{size:>9} B | {median_ms(plain):8.3f} {median_ms(traced):8.3f} {median_ms(traced) / median_ms(plain):5.2f} "
              f"| rank 0: {median_ms(plain0):8.3f} {median_ms(traced0):8.3f} {median_ms(traced0) / median_ms(plain0):5.2f} "
              f"| {median_ms(before0):7.3f} {median_ms(span0):8.3f}")


if __name__ == "__main__":
    main()
