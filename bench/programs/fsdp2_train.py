"""FSDP2 training, as bench/torch_api_overhead.py times it: fully_shard on 4 × Linear(256), SGD, 5 steps."""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(4)])
for layer in model:
    fully_shard(layer)
fully_shard(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
batch = torch.randn(32, 256)
for step in range(5):
    model(batch).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
