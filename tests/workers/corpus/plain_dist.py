"""Corpus: every plain `torch.distributed` collective and send/recv, called directly."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
x = torch.arange(4.0) + rank
dist.all_reduce(x)
dist.broadcast(x, src=0)
dist.reduce(x, dst=0, op=dist.ReduceOp.MAX)
gathered = [torch.empty(4) for _ in range(world)]
dist.all_gather(gathered, x)
together = torch.empty(4 * world)
dist.all_gather_into_tensor(together, x)
mine = torch.empty(4)
dist.reduce_scatter_tensor(mine, torch.ones(4 * world))
swapped = torch.empty(4 * world)
dist.all_to_all_single(swapped, torch.arange(4.0 * world))
dist.scatter(mine, [torch.ones(4) * r for r in range(world)] if rank == 0 else None, src=0)
dist.gather(mine, [torch.empty(4) for _ in range(world)] if rank == 0 else None, dst=0)
dist.all_reduce(x, async_op=True).wait()
dist.barrier()
if rank == 0:
    dist.send(torch.ones(3), dst=1)
    dist.isend(torch.ones(3), dst=1).wait()
elif rank == 1:
    dist.recv(torch.empty(3), src=0)
    dist.irecv(torch.empty(3), src=0).wait()
dist.destroy_process_group()
