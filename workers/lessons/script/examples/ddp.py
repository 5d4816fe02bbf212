"""DDP: each rank a full copy of the model and its own slice of the batch; backward all-reduces the gradients."""

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()

torch.manual_seed(0)                             # the same weights on every rank
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

torch.manual_seed(1 + rank)                      # each rank its own data
for step in range(3):
    x, y = torch.randn(4, 8), torch.randn(4, 4)
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()                              # DDP's reducer all-reduces the gradient buckets here
    optimizer.step()
    print(f"rank {rank} step {step}: loss {loss.item():.4f}")

dist.destroy_process_group()
