"""A hand-written ring all-reduce: reduce-scatter, then all-gather, with send and recv only."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world

x = torch.arange(2.0 * world) + 10 * rank       # 2 values per chunk, a chunk per rank
chunks = list(x.clone().chunk(world))

# reduce-scatter: after world-1 steps, chunk (rank+1) % world holds the sum of every rank's chunk
for step in range(world - 1):
    send, receive = (rank - step) % world, (rank - step - 1) % world
    request = dist.isend(chunks[send].clone(), dst=right)
    incoming = torch.empty_like(chunks[receive])
    dist.recv(incoming, src=left)
    chunks[receive] += incoming
    request.wait()

# all-gather: pass the summed chunks round the ring
for step in range(world - 1):
    send, receive = (rank - step + 1) % world, (rank - step) % world
    request = dist.isend(chunks[send].clone(), dst=right)
    dist.recv(chunks[receive], src=left)
    request.wait()

expected = x.clone()
dist.all_reduce(expected)                        # torch's own, to check against
print(f"rank {rank}: ring {torch.cat(chunks).tolist()} matches all_reduce: {torch.equal(torch.cat(chunks), expected)}")
dist.destroy_process_group()
