"""Tracing overhead on torch's own parallel APIs: an FSDP2 training step and a DTensor tensor-parallel
step (`parallelize_module`, Colwise then Rowwise), on real gloo ranks, traced and untraced.

Each rank builds the program once, then times rounds of `--steps` steps, alternating traced and
untraced rounds (and swapping the order each round): the tracer is installed for a traced round
(both levels: the `dist.*` wrappers and the dispatch level) and its events go through a rank's own
channel (workers/channel.py) over TCP to another process that reads them, as the server does; a
traced round ends once they are all written. A round is a whole run (set up — fully_shard,
parallelize_module — and the steps) in ranks already started, as the warm launcher's ranks are;
the steps alone are timed too. Rank 0 prints the medians and the ratios (budget ≤ 1.25 for a run),
wall-clock and CPU time (all rank 0's threads, and its main thread alone: the tracer's work there
is on the run's critical path), and the tracer's cost per aten op that is not a collective.
Usage: python bench/torch_api_overhead.py [--world-size 2] [--rounds 9] [--steps 5] [--profile FILE]
(--profile: cProfile of rank 0's main thread during its traced rounds, for pstats)
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


_READER = """
import socket, sys
server = socket.create_server(("127.0.0.1", 0))
print(server.getsockname()[1], flush=True)
conn, _ = server.accept()
while conn.recv(1 << 20):
    pass
"""


def _reader_channel(rank: int):
    """A rank's own channel (workers/channel.py: events written at once, blobs by its thread), connected to
    another process that reads and drops what comes, as the server reads a rank's events."""
    from workers.channel import EventChannel
    reader = subprocess.Popen([sys.executable, "-c", _READER], stdout=subprocess.PIPE, text=True)
    return EventChannel(f"127.0.0.1:{int(reader.stdout.readline())}", "bench", "token", rank)


def fsdp2_step():
    import torch
    from torch.distributed.fsdp import fully_shard
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU()) for _ in range(4)])
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = torch.randn(32, 256)

    def step():
        model(batch).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    return step


def dtensor_step():
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    mesh = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("tp",))
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
    mlp = parallelize_module(mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    batch = torch.randn(64, 256)

    def step():
        mlp(batch).square().mean().backward()
    return step


PROGRAMS = {"FSDP2 fully_shard, 4×Linear(256)": fsdp2_step, "DTensor parallelize_module MLP 256→1024→256": dtensor_step}


def per_op_cost(tracer_factory) -> float:
    """Microseconds the installed tracer adds to one small aten op (an add) that is not a collective."""
    import torch
    x = torch.ones(4)

    def seconds(n=20000):
        start = time.perf_counter()
        for _ in range(n):
            x.add(1)
        return (time.perf_counter() - start) / n
    plain = min(seconds() for _ in range(3))
    tracer = tracer_factory()
    tracer.install()
    try:
        traced = min(seconds() for _ in range(3))
    finally:
        tracer.uninstall()
    return (traced - plain) * 1e6


def rank_main(rounds: int, steps: int, profile: str | None = None) -> None:
    import cProfile
    import torch
    import torch.distributed as dist
    sys.path.insert(0, str(REPO))
    from workers.tracer import Tracer

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    channel = _reader_channel(rank)
    t0 = time.monotonic()
    profiler = cProfile.Profile() if profile and rank == 0 else None

    def new_tracer():
        return Tracer(channel.send, rank, lambda: time.monotonic() - t0)   # as workers/rank.py makes it

    def timed(build, trace: bool) -> tuple[float, float, float, float, float]:
        """Wall-clock seconds of the whole run (set up and every step) and of the steps alone, then
        this rank's CPU seconds for each (all its threads: less swayed by other processes' load),
        then the CPU seconds of the run's own thread alone (the tracer's work is all done there;
        the rest is gloo's threads)."""
        tracer = new_tracer() if trace else None
        dist.barrier()
        if tracer:
            tracer.install()
        if profiler and tracer:
            profiler.enable()
        try:
            start, cpu_start, thread_start = time.perf_counter(), time.process_time(), time.thread_time()
            step = build()
            dist.barrier()
            steps_start, cpu_steps_start = time.perf_counter(), time.process_time()
            for _ in range(steps):
                step()
            dist.barrier()
            if tracer:   # a traced run is over once its events are written (by the ends gloo's threads owe)
                tracer.settle()
            end, cpu_end, thread_end = time.perf_counter(), time.process_time(), time.thread_time()
            return (end - start, end - steps_start, cpu_end - cpu_start, cpu_end - cpu_steps_start,
                    thread_end - thread_start)
        finally:
            if profiler and tracer:
                profiler.disable()
            if tracer:
                tracer.uninstall()

    for name, build in PROGRAMS.items():
        timed(build, False)   # warm
        times = {True: [], False: []}
        for i in range(rounds):
            for trace in ((True, False) if i % 2 == 0 else (False, True)):
                times[trace].append(timed(build, trace))
        if rank == 0:
            for part, label in enumerate((f"run (set up + {steps} steps), wall", f"{steps} steps alone, wall",
                                          f"run (set up + {steps} steps), rank 0's CPU",
                                          f"{steps} steps alone, rank 0's CPU",
                                          f"run (set up + {steps} steps), rank 0's main thread's CPU")):
                traced = statistics.median(t[part] for t in times[True])
                plain = statistics.median(t[part] for t in times[False])
                print(f"{name}, {dist.get_world_size()} ranks, {label}: traced median {traced * 1000:.1f} ms, "
                      f"untraced {plain * 1000:.1f} ms, ratio {traced / plain:.3f}", flush=True)
    if profiler:
        profiler.dump_stats(profile)
    if rank == 0:
        print(f"tracer installed, per aten op that is not a collective: {per_op_cost(new_tracer):+.2f} µs "
              "(the dispatch level's kernels sit on collective ops only)", flush=True)
    dist.destroy_process_group()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--profile", metavar="FILE", help="cProfile rank 0's main thread in traced rounds into FILE")
    args = parser.parse_args(argv)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(args.world_size),
           "GLOO_SOCKET_IFNAME": "lo"}
    ranks = [subprocess.Popen([sys.executable, __file__, "--rank-main", str(args.rounds), str(args.steps),
                               *([str(Path(args.profile).resolve())] if args.profile else [])],
                              env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}, cwd=REPO,
                              stderr=subprocess.DEVNULL if r else None)
             for r in range(args.world_size)]
    codes = [rank.wait() for rank in ranks]
    if any(codes):
        raise SystemExit(f"a rank failed: exit codes {codes}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--rank-main":
        rank_main(int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:5])
    else:
        main()
