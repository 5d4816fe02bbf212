import torch
import torch.distributed as dist


def ring_all_reduce(x, rank, world):
    """Reduce-scatter then all-gather around the ring rank → rank + 1, with send/recv only."""
    chunks = list(x.clone().chunk(world))
    right, left = (rank + 1) % world, (rank - 1) % world
    ...
    return torch.cat(chunks)
