"""Every collective of torch.distributed on small integer tensors, so each number can be read.

Rank r starts with [base·r + 0, base·r + 1, …] (base 10, or 100 for longer tensors): the tens digit
says which rank a number came from. After the call, each rank shows its tensor and, for every
element, the ranks it came from; a check compares it with `expected.py`, the same result computed
plainly without any communication.

          broadcast        reduce          all_reduce       all_gather       reduce_scatter
    r0  [a]──┬──▶[a]    [a]─┐  ▶[a+b+c]  [a]─┐ ┌▶[Σ]      [a]─┐ ┌▶[a b c]   [a0 a1 a2]─┐ ┌▶[Σ·0]
    r1  [ ]  ├──▶[a]    [b]─┼──┘          [b]─┼─┼▶[Σ]      [b]─┼─┼▶[a b c]   [b0 b1 b2]─┼─┼▶[Σ·1]
    r2  [ ]  └──▶[a]    [c]─┘             [c]─┘ └▶[Σ]      [c]─┘ └▶[a b c]   [c0 c1 c2]─┘ └▶[Σ·2]
"""

import time

import torch
import torch.distributed as dist

from workers.cost_model import bandwidths, fit_alpha_beta, model_formula, predict
from workers.lessons.collectives import expected

REDUCE_OPS = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX}


def starting_tensor(rank, size, device):
    base = 10 if size <= 10 else 100
    return torch.arange(size, dtype=torch.float32, device=device) + base * rank


def reduce_into(x, p, root=None):
    """gloo has no AVG: average as a sum divided by the number of ranks."""
    op = REDUCE_OPS["sum" if p.reduce_op == "avg" else p.reduce_op]
    if root is None:
        dist.all_reduce(x, op=op)
    else:
        dist.reduce(x, dst=root, op=op)
    if p.reduce_op == "avg" and (root is None or dist.get_rank() == root):
        x /= dist.get_world_size()
    return x


def run_collective(x, p, rank, world):
    """One call of `p.op`; returns this rank's tensor afterwards."""
    n = x.numel()
    if p.op == "broadcast":
        dist.broadcast(x, src=p.root)                         # root's x copied to everyone
        return x
    if p.op == "reduce":                                      # only root holds the result; elsewhere
        work = reduce_into(x.clone(), p, root=p.root)         # the buffer is scratch (gloo overwrites it)
        return work if rank == p.root else x
    if p.op == "all_reduce":
        return reduce_into(x, p)                              # everyone holds the result
    if p.op == "all_gather":
        out = x.new_empty(world * n)                          # [world·n]: rank r's x at r·n
        dist.all_gather_single(out, x)
        return out
    if p.op == "reduce_scatter":
        out = x.new_empty(n // world)                         # [n/world]: the sum of everyone's chunk r
        dist.reduce_scatter_single(out, x)
        return out
    if p.op == "all_to_all":
        out = torch.empty_like(x)                             # chunk j of rank r goes to rank j, in slot r
        dist.all_to_all_single(out, x)
        return out
    if p.op == "scatter":
        out = x.new_empty(n // world)                         # root's chunk r goes to rank r
        chunks = list(x.chunk(world)) if rank == p.root else None
        dist.scatter(out, chunks, src=p.root)
        return out
    if p.op == "gather":
        slots = [torch.empty_like(x) for _ in range(world)] if rank == p.root else None
        dist.gather(x, slots, dst=p.root)                     # everyone's x lands on root, in rank order
        return torch.cat(slots) if rank == p.root else x
    if p.op == "send_recv":                                   # even ranks send to their right neighbour
        if rank % 2 == 0 and rank + 1 < world:
            dist.send(x, dst=rank + 1)
        elif rank % 2 == 1:
            dist.recv(x, src=rank - 1)
        return x
    dist.barrier()                                            # no data: everyone waits for everyone
    return x


def run(lab, p):
    rank, world = lab.rank, lab.world_size
    size = p.size or 2 * world
    everyone = [starting_tensor(r, size, lab.device) for r in range(world)]   # known to all, for the check
    x = everyone[rank].clone()
    lab.show("before", x)

    out = run_collective(x, p, rank, world)

    lab.show("after", out, origin=expected.origin(p.op, rank, world, size, p.root))
    want = expected.result(p.op, rank, [t.tolist() for t in everyone], p.root, p.reduce_op)
    lab.check(p.op, out, torch.tensor(want, dtype=out.dtype, device=out.device),
              f"rank {rank}'s tensor after {p.op} against expected.py's plain computation")
    if p.sweep:
        sweep(lab, p, world)


def ping_pong(lab, nbytes, repeats=5):
    """One-way time of an nbytes message between ranks 0 and 1 (half a round trip), median of repeats."""
    buf = torch.zeros(max(nbytes // 4, 1), device=lab.device)
    times = []
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        if lab.rank == 0:
            dist.send(buf, dst=1)
            dist.recv(buf, src=1)
        elif lab.rank == 1:
            dist.recv(buf, src=0)
            dist.send(buf, dst=0)
        times.append((time.perf_counter() - start) / 2)
    return sorted(times)[len(times) // 2]


def sweep(lab, p, world):
    """Calibrate α and β by ping-pong, then time the collective over sizes against the model."""
    with lab.untraced():                                      # thousands of calls: time them, don't trace them
        sizes = [4 << k for k in range(0, 19, 3)]             # 4 B … 1 MiB
        alpha, beta = fit_alpha_beta(sizes, [ping_pong(lab, s) for s in sizes])
        for nbytes in sizes:
            n = max(nbytes // 4, world) // world * world
            x = starting_tensor(lab.rank, n, lab.device)
            times = []
            for _ in range(5):
                dist.barrier()
                start = time.perf_counter()
                run_collective(x.clone(), p, lab.rank, world)
                times.append(time.perf_counter() - start)
            seconds = sorted(times)[2]
            size_bytes = n * 4 * (world if p.op in ("all_gather", "gather") else 1)
            algbw, busbw = bandwidths(p.op, world, size_bytes, seconds)
            if lab.rank == 0:
                model, formula = model_formula(p.op, world)
                lab.metric("cost_sweep", seconds, "s", bytes=size_bytes, algbw=algbw, busbw=busbw,
                           predicted=predict(p.op, world, size_bytes, alpha, beta), model=model, formula=formula)
    if lab.rank == 0:
        lab.metric("alpha", alpha, "s", formula="latency per message, fitted from ping-pong times")
        lab.metric("beta", beta, "s/B", formula="seconds per byte, fitted from ping-pong times")
