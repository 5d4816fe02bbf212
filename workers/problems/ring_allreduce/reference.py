import torch
import torch.distributed as dist


def ring_all_reduce(x, rank, world):
    """Reduce-scatter then all-gather around the ring rank → rank + 1, with send/recv only."""
    chunks = list(x.clone().chunk(world))
    right, left = (rank + 1) % world, (rank - 1) % world
    incoming = torch.empty_like(chunks[0])
    for step in range(world - 1):
        work = dist.isend(chunks[(rank - step) % world].contiguous(), dst=right)
        dist.recv(incoming, src=left)
        work.wait()
        chunks[(rank - step - 1) % world] += incoming
    for step in range(world - 1):
        work = dist.isend(chunks[(rank + 1 - step) % world].contiguous(), dst=right)
        dist.recv(incoming, src=left)
        work.wait()
        chunks[(rank - step) % world] = incoming.clone()
    return torch.cat(chunks)
