"""Ring all-reduce by hand, round after round: a long run of send/recv and all-reduce (the bench's biggest)."""

import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4

for r in range(rounds):
    x = torch.arange(2.0 * world) + 10 * rank + r
    chunks = list(x.clone().chunk(world))
    for step in range(world - 1):                   # reduce-scatter
        send, receive = (rank - step) % world, (rank - step - 1) % world
        request = dist.isend(chunks[send].clone(), dst=right)
        incoming = torch.empty_like(chunks[receive])
        dist.recv(incoming, src=left)
        chunks[receive] += incoming
        request.wait()
    for step in range(world - 1):                   # all-gather
        send, receive = (rank - step + 1) % world, (rank - step) % world
        request = dist.isend(chunks[send].clone(), dst=right)
        dist.recv(chunks[receive], src=left)
        request.wait()
    expected = x.clone()
    dist.all_reduce(expected)
    assert torch.equal(torch.cat(chunks), expected), (rank, r)
print(f"rank {rank}: {rounds} rounds, each matching all_reduce")
dist.destroy_process_group()
