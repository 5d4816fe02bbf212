"""DTensor tensor parallelism, as bench/torch_api_overhead.py times it: parallelize_module, Colwise then Rowwise,
on an MLP 256 → 1024 → 256, 5 forward and backward passes."""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

dist.init_process_group("gloo")
mesh = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("tp",))
torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))
mlp = parallelize_module(mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
batch = torch.randn(64, 256)
for step in range(5):
    mlp(batch).square().mean().backward()
dist.destroy_process_group()
