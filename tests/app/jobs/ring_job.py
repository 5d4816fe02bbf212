"""A small torchrun job, unchanged by paralab: an all_reduce, a ring of send/recv (two ranks or more),
an all_gather, a barrier, then one step of DDP (whose collectives only torch's dispatch level sees). With JOB_HOLD_FILE set, every rank waits after the all_reduce until that
file exists (a test does something to the server meanwhile)."""

import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()

x = torch.full((4,), float(rank + 1))
dist.all_reduce(x)
assert x[0].item() == world * (world + 1) / 2, x

hold = os.environ.get("JOB_HOLD_FILE")
while hold and not os.path.exists(hold):
    time.sleep(0.05)

if world > 1:
    token = torch.tensor([float(rank)])
    received = torch.zeros(1)
    right, left = (rank + 1) % world, (rank - 1) % world
    if rank % 2 == 0:
        dist.send(token, right)
        dist.recv(received, left)
    else:
        dist.recv(received, left)
        dist.send(token, right)
    assert received.item() == left

gathered = [torch.zeros(2) for _ in range(world)]
dist.all_gather(gathered, torch.tensor([rank, rank * 10.0]))
dist.barrier()

model = DistributedDataParallel(torch.nn.Linear(4, 2))
model(torch.ones(3, 4) * rank).sum().backward()
print(f"rank {rank} of {world}: all done", flush=True)
dist.destroy_process_group()
