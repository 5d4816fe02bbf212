"""Corpus: DTensor, `distribute_tensor` then `redistribute` between Shard, Replicate and Partial."""
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

dist.init_process_group("gloo")
mesh = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("tp",))
torch.manual_seed(0)
full = torch.randn(8, 4)
rows = distribute_tensor(full, mesh, [Shard(0)])
everywhere = rows.redistribute(mesh, [Replicate()])          # all-gather
columns = everywhere.redistribute(mesh, [Shard(1)])          # no communication: each keeps its slice
back = columns.redistribute(mesh, [Shard(0)])                # all-to-all
partial = DTensor.from_local(torch.ones(2, 2), mesh, [Partial()])
summed = partial.redistribute(mesh, [Replicate()])           # all-reduce
scattered = DTensor.from_local(torch.ones(4, 2), mesh, [Partial()]).redistribute(mesh, [Shard(0)])  # reduce-scatter
assert torch.equal(back.full_tensor(), full)                 # all-gather
dist.destroy_process_group()
