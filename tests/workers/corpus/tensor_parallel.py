"""Corpus: `parallelize_module` with ColwiseParallel, RowwiseParallel and SequenceParallel."""
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.up = torch.nn.Linear(8, 32)
        self.down = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.down(torch.relu(self.up(self.norm(x))))


dist.init_process_group("gloo")
mesh = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("tp",))
torch.manual_seed(0)
block = parallelize_module(Block(), mesh, {
    "norm": SequenceParallel(sequence_dim=0),
    "up": ColwiseParallel(input_layouts=Shard(0)),
    "down": RowwiseParallel(output_layouts=Shard(0)),
})
x = torch.randn(4, 8)                # this rank's 4 tokens of the sequence
out = block(x)                       # [4, 8]: this rank's tokens again, after the reduce-scatter
out.square().sum().backward()
dist.destroy_process_group()
