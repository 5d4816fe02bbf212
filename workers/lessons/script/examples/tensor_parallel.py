"""DTensor tensor parallelism: `parallelize_module` splits an MLP column-wise then row-wise (Megatron's f and g)."""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("tp",))

torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))
reference = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))
reference.load_state_dict(mlp.state_dict())
parallelize_module(mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})   # 32 hidden units split

x = torch.randn(4, 8)                            # the same input on every rank
y = mlp(x)                                       # the row-wise layer all-reduces its partial sums
print(f"rank {rank}: matches one process: {torch.allclose(y, reference(x), atol=1e-5)}")

dist.destroy_process_group()
