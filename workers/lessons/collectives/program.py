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

from workers.cost_model import bandwidths, fit_line, model_formula, predict
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

    arrived = time.monotonic()                                # one clock for every rank of a host
    out = run_collective(x, p, rank, world)
    left = time.monotonic()

    lab.show("after", out, origin=expected.origin(p.op, rank, world, size, p.root))
    if expected.receives(p.op, rank, world, p.root):         # a rank that only sends holds nothing new
        want = expected.result(p.op, rank, [t.tolist() for t in everyone], p.root, p.reduce_op)
        lab.check(p.op, out, torch.tensor(want, dtype=out.dtype, device=out.device),
                  f"rank {rank}'s tensor after {p.op} against expected.py's plain computation")
    if p.op == "barrier":
        check_barrier(lab, arrived, left)
    if p.sweep:
        sweep(lab, p, world)


def check_barrier(lab, arrived, left):
    """A barrier moves no data; what it promises is that no rank leaves before the last one arrives."""
    with lab.untraced():                                      # the times, shared for the check only
        times = torch.tensor([arrived, left], dtype=torch.float64)
        everyone = [torch.empty_like(times) for _ in range(lab.world_size)]
        dist.all_gather(everyone, times)
    last_arrival = max(float(t[0]) for t in everyone)
    lab.check("barrier: left after the last rank arrived", torch.tensor([float(left >= last_arrival)]),
              torch.tensor([1.0]), f"1 when this rank left the barrier ({left - last_arrival:+.6f} s after the "
              f"last rank arrived) no earlier than the last rank arrived, else 0")


SWEEP_SIZES = [4 << k for k in range(0, 19, 3)]              # 4 B … 1 MiB
REPEATS = 5


def ping_pong(lab, nbytes, peer=1):
    """Round trips of an nbytes message between rank 0 and `peer` (send, then wait for it to come back)."""
    buf = torch.zeros(max(nbytes // 4, 1), device=lab.device)
    times = []
    for _ in range(REPEATS):
        dist.barrier()
        start = time.perf_counter()
        if lab.rank == 0:
            dist.send(buf, dst=peer)
            dist.recv(buf, src=peer)
        elif lab.rank == peer:
            dist.recv(buf, src=0)
            dist.send(buf, dst=0)
        times.append(time.perf_counter() - start)
    return times


def slowest_rank(times):
    """Each repeat's time on the rank that took longest: the call is over when the last rank is done."""
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def record_samples(lab, series, nbytes, times):
    """Every timed repeat as an event, so the fit can be redone from the log."""
    if lab.rank == 0:
        for i, seconds in enumerate(times):
            lab.metric("cost_sample", seconds, "s", series=series, bytes=nbytes, repeat=i)


def median(times):
    return sorted(times)[len(times) // 2]


def sweep(lab, p, world):
    """Fit α and β to ping-pong round trips, then time the collective over sizes against the model."""
    with lab.untraced():                                      # thousands of calls: time them, don't trace them
        round_trips = {}
        for nbytes in SWEEP_SIZES:
            round_trips[nbytes] = ping_pong(lab, nbytes)
            record_samples(lab, "ping_pong", nbytes, round_trips[nbytes])
        fit = fit_line(SWEEP_SIZES, [median(round_trips[m]) / 2 for m in SWEEP_SIZES])   # one way: half
        if p.op == "barrier":
            time_barrier(lab, world, fit)
        elif p.op == "send_recv":
            for nbytes in SWEEP_SIZES:                        # a round trip is what one can time
                report_point(lab, p.op, world, nbytes, median(round_trips[nbytes]), fit, round_trip=True)
        else:
            time_collective(lab, p, world, fit)
        links = fit_per_link(lab, world)
    report_fit(lab, fit)
    for link, (peer, link_fit) in links.items():
        report_link(lab, link, peer, link_fit)


def time_collective(lab, p, world, fit):
    for nbytes in SWEEP_SIZES:
        n = max(nbytes // 4, world) // world * world
        x = starting_tensor(lab.rank, n, lab.device)
        times = []
        for _ in range(REPEATS):
            dist.barrier()
            start = time.perf_counter()
            run_collective(x.clone(), p, lab.rank, world)
            times.append(time.perf_counter() - start)
        times = slowest_rank(times)
        size_bytes = n * 4 * (world if p.op in ("all_gather", "gather") else 1)
        record_samples(lab, p.op, size_bytes, times)
        report_point(lab, p.op, world, size_bytes, median(times), fit)


def report_point(lab, op, world, size_bytes, seconds, fit, round_trip=False):
    """One size of the sweep: the measured time beside the model's (a round trip: two messages)."""
    if lab.rank != 0:
        return
    moved = 2 * size_bytes if round_trip else size_bytes
    algbw, busbw = bandwidths(op, world, moved, seconds)
    predicted = predict("send" if round_trip else op, world, size_bytes, fit.alpha, fit.beta) * (2 if round_trip else 1)
    extra = {"round_trip": True} if round_trip else {}
    model, formula = model_formula("send" if round_trip else op, world)
    if round_trip:
        model, formula = "ping-pong round trip", "T(m) = 2(α + m·β)"
    lab.metric("cost_sweep", seconds, "s", bytes=size_bytes, algbw=algbw, busbw=busbw, predicted=predicted, **extra,
               model=model, formula=formula)


def time_barrier(lab, world, fit):
    """A barrier moves no data: one latency, against the dissemination barrier's ⌈log₂p⌉·α."""
    times = []
    for _ in range(REPEATS * 4):
        dist.barrier()
        start = time.perf_counter()
        dist.barrier()
        times.append(time.perf_counter() - start)
    times = slowest_rank(times)
    record_samples(lab, "barrier", 0, times)
    if lab.rank == 0:
        lab.metric("barrier_latency", median(times), "s", expected=predict("barrier", world, 0, fit.alpha, fit.beta),
                   formula=f"⌈log₂p⌉·α, gloo's dissemination barrier  (p={world}, α fitted by ping-pong)")


def link_peers(lab, world):
    """Where ranks sit on more than one host (a Ray cluster): rank 0's first peer on its own host and
    its first on another — {link class: peer}; {} on one host."""
    hosts = [None] * world
    dist.all_gather_object(hosts, lab.host)
    if len(set(hosts)) == 1:
        return {}
    same = next((r for r in range(1, world) if hosts[r] == hosts[0]), None)
    across = next(r for r in range(1, world) if hosts[r] != hosts[0])
    return {link: peer for link, peer in (("same host", same), ("across hosts", across)) if peer is not None}


def fit_per_link(lab, world):
    """α and β again for each link class, from ping-pong with a peer of that class: a message inside
    a host goes through memory, one across hosts through the network. {link: (peer, fit)}."""
    fits = {}
    for link, peer in link_peers(lab, world).items():
        one_way = [median(ping_pong(lab, nbytes, peer)) / 2 for nbytes in SWEEP_SIZES]
        fits[link] = (peer, fit_line(SWEEP_SIZES, one_way))
    return fits


def report_link(lab, link, peer, fit):
    if lab.rank != 0:
        return
    lab.metric("link_fit", fit.alpha, "s", link=link, ranks=[0, peer], beta=fit.beta, r2=fit.r2,
               formula=f"α, β of one-way times {link} (ping-pong between ranks 0 and {peer})")


def report_fit(lab, fit):
    if lab.rank != 0:
        return
    quality = {"r2": fit.r2, "clamped": list(fit.clamped), "warnings": fit.warnings()}
    lab.metric("alpha", fit.alpha, "s", stderr=fit.alpha_stderr, **quality,
               formula="latency per message: the intercept of one-way times (half a ping-pong round trip)")
    lab.metric("beta", fit.beta, "s/B", stderr=fit.beta_stderr, **quality,
               formula="seconds per byte: the slope of one-way times (half a ping-pong round trip)")
