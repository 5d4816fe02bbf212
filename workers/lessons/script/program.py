"""A plain torch.distributed program, as torchrun would run it: every rank adds its number to the
others' with an all-reduce, then passes a token around the ring with send/recv."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")          # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the environment
rank, world = dist.get_rank(), dist.get_world_size()

x = torch.full((4,), float(rank + 1))    # [r+1, r+1, r+1, r+1]
dist.all_reduce(x)                       # every rank: 1 + 2 + … + world
print(f"rank {rank}: sum {x[0].item():.0f}")

token = torch.zeros(1)
if world > 1 and rank == 0:
    token += 1
    dist.send(token, dst=1)
    dist.recv(token, src=world - 1)
    print(f"the token went round {world} ranks: {token.item():.0f}")
elif world > 1:
    dist.recv(token, src=rank - 1)
    token += 1
    dist.send(token, dst=(rank + 1) % world)

dist.destroy_process_group()
