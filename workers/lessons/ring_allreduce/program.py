"""All-reduce by hand, from send and recv.

Ring (Patarasuk & Yuan, 2009; what NCCL does for large messages): cut the tensor into p chunks and
pass them around the ring r → r+1.
  1. reduce-scatter, p−1 steps: at step s rank r sends chunk (r−s) mod p and adds the chunk it
     receives into its own copy; afterwards rank r holds the whole sum of chunk (r+1) mod p;
  2. all-gather, p−1 steps: the finished chunks travel once more around the ring.
  2(p−1) steps of n/p elements: each rank sends 2(p−1)/p·n elements, almost independent of p.

       step 1            step 2            (p = 3, reduce-scatter)
    r0 ─c0─▶ r1       r0 ─c2─▶ r1
    r1 ─c1─▶ r2       r1 ─c0─▶ r2
    r2 ─c2─▶ r0       r2 ─c1─▶ r0

Recursive doubling: at step k rank r swaps its whole tensor with rank r XOR 2ᵏ and adds:
log₂p steps, but n elements each — better for small messages, where latency dominates.
"""

import math

import torch

from workers import comm


def exchange(send, receive_into, to, frm, label):
    """Send `send` to rank `to` while receiving from rank `frm` (isend first: both sides can't block)."""
    work = comm.isend(send, dst=to, label=label)
    comm.recv(receive_into, src=frm, label=label)
    work.wait()


def ring_all_reduce(lab, x):
    p, r = lab.world_size, lab.rank
    right, left = (r + 1) % p, (r - 1) % p
    chunks = list(x.chunk(p))                            # p views into x, n/p elements each
    incoming = torch.empty_like(chunks[0])
    for step in range(p - 1):                            # 1. reduce-scatter
        out, into = (r - step) % p, (r - step - 1) % p
        with lab.compute(f"reduce-scatter step {step + 1}"):
            exchange(chunks[out], incoming, right, left,
                     f"reduce-scatter step {step + 1}: send chunk {out}, add the received chunk {into}")
            chunks[into] += incoming
        lab.show(f"ring buffer after reduce-scatter step {step + 1}", x)
    for step in range(p - 1):                            # 2. all-gather
        out, into = (r + 1 - step) % p, (r - step) % p
        with lab.compute(f"all-gather step {step + 1}"):
            exchange(chunks[out], chunks[into], right, left,
                     f"all-gather step {step + 1}: pass on finished chunk {out}, receive chunk {into}")
        lab.show(f"ring buffer after all-gather step {step + 1}", x)
    return x


def recursive_doubling_all_reduce(lab, x):
    incoming = torch.empty_like(x)
    for k in range(int(math.log2(lab.world_size))):
        partner = lab.rank ^ (1 << k)                    # r XOR 2ᵏ: the distance doubles each step
        with lab.compute(f"doubling step {k + 1}"):
            exchange(x, incoming, partner, partner, f"doubling step {k + 1}: swap with rank {partner} and add")
            x += incoming
        lab.show(f"doubling buffer after step {k + 1}", x)
    return x


def run(lab, p):
    world, rank = lab.world_size, lab.rank
    n = p.size or 2 * world
    x0 = torch.arange(n, dtype=torch.float32, device=lab.device) + 10 * rank   # rank r: 10r, 10r+1, …
    lab.show("input", x0)
    expected = x0.clone()
    comm.all_reduce(expected, label="the reference: torch.distributed's own all_reduce")

    power_of_two = world & (world - 1) == 0
    if rank == 0:
        lab.metric("steps_ring", 2 * (world - 1), "steps", formula="2(p−1)", elements_sent=2 * (world - 1) * n // world)
        if power_of_two:
            lab.metric("steps_recursive_doubling", int(math.log2(world)), "steps", formula="log₂p",
                       elements_sent=n * int(math.log2(world)))
    if p.algorithm in ("both", "ring"):
        ring = ring_all_reduce(lab, x0.clone())
        lab.check("ring all-reduce", ring, expected, "the ring's result against dist.all_reduce on the same input")
    if p.algorithm == "recursive_doubling" or (p.algorithm == "both" and power_of_two):
        doubled = recursive_doubling_all_reduce(lab, x0.clone())
        lab.check("recursive doubling all-reduce", doubled, expected,
                  "recursive doubling's result against dist.all_reduce on the same input")
