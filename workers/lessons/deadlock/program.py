"""Four ways to hang a distributed program. Each is a real bug, run on real ranks: the run does not
freeze the page; after `timeout_s` without progress paralab stops every rank and reports, per rank
and group, the last collective begun and the last completed, and what kind of mismatch it is.

A collective is a rendezvous: every member of the group must make the same call, in the same order,
with matching shapes. Point-to-point calls must pair up: a send to r with a recv from this rank,
with the same tag.
"""

import torch
import torch.distributed as dist

from workers import comm


def run(lab, p):
    rank, world = lab.rank, lab.world_size
    x = torch.full((4,), float(rank), device=lab.device)
    comm.all_reduce(x, label="a healthy all-reduce: every rank calls it")

    if p.bug == "skip_collective":
        if rank != world - 1:                              # the bug: the last rank skips this call
            comm.all_reduce(x, label="every rank but the last reaches this all-reduce")

    elif p.bug == "op_mismatch":
        if rank == 0:
            dist.all_reduce(x)                             # the bug: rank 0 all-reduces …
        else:
            out = x.new_empty(world * x.numel())
            dist.all_gather_single(out, x)                 # … while the others all-gather

    elif p.bug == "shape_mismatch":
        y = torch.ones(4 + rank, device=lab.device)        # the bug: every rank a different length
        dist.all_reduce(y)

    elif p.bug == "unmatched_send":
        if rank == 0:
            dist.send(x, dst=1, tag=1)                     # the bug: sent with tag 1 …
        elif rank == 1:
            dist.recv(x, src=0, tag=0)                     # … awaited with tag 0: they never match
