import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor


def run(lab, p):
    mesh = init_device_mesh("cpu", (lab.world_size,), mesh_dim_names=("tp",))
    full = torch.arange(32.0).reshape(8, 4)
    rows = distribute_tensor(full, mesh, [Shard(0)])                # each rank: 8/n rows
    everywhere = rows.redistribute(mesh, [Replicate()])             # all-gather: every rank, all rows
    partial = DTensor.from_local(everywhere.to_local() * (lab.rank + 1), mesh, [Partial()])
    partial.redistribute(mesh, [Shard(0)])                          # reduce-scatter: sum, then 8/n rows each
