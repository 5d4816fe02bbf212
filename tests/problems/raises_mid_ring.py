import torch
import torch.distributed as dist


def ring_all_reduce(x, rank, world):
    """The reference's ring, except that rank 2 raises in its second step: its peers then find
    their connections to it closed."""
    chunks = list(x.clone().chunk(world))
    right, left = (rank + 1) % world, (rank - 1) % world
    incoming = torch.empty_like(chunks[0])
    for step in range(world - 1):
        if rank == 2 and step == 1:
            raise ValueError("planted: rank 2 gives up")
        work = dist.isend(chunks[(rank - step) % world].contiguous(), dst=right)
        dist.recv(incoming, src=left)
        work.wait()
        chunks[(rank - step - 1) % world] += incoming
    return torch.cat(chunks)
