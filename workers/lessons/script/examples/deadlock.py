"""A deadlock: the last rank skips an all-reduce the others make, so they wait for it forever."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()

x = torch.ones(4)
dist.all_reduce(x)                               # everybody: fine
if rank != world - 1:                            # the bug: a collective inside a rank-dependent branch
    dist.all_reduce(x)                           # ranks 0..world-2 wait here; paralab reports the hang
print(f"rank {rank} finished")
