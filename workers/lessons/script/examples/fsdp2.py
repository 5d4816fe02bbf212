"""FSDP2 (`fully_shard`): each rank keeps a shard of every weight; all-gathers them to compute, reduce-scatters the gradients."""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
rank = dist.get_rank()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
for layer in model:
    if isinstance(layer, nn.Linear):
        fully_shard(layer)                       # one all-gather / reduce-scatter unit per layer
fully_shard(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

torch.manual_seed(1 + rank)
for step in range(2):
    x, y = torch.randn(4, 8), torch.randn(4, 4)
    loss = nn.functional.mse_loss(model(x), y)   # all-gather each layer's weight shards
    optimizer.zero_grad()
    loss.backward()                              # reduce-scatter each layer's gradients
    optimizer.step()
    print(f"rank {rank} step {step}: loss {loss.item():.4f}")

dist.destroy_process_group()
