"""Corpus: a `torch.distributed.pipelining` GPipe schedule, one stage per rank, four microbatches."""
import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
stage_module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
stage = PipelineStage(stage_module, rank, world, torch.device("cpu"))
schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=lambda out, target: out.square().mean())
batch = torch.randn(8, 8)
if rank == 0:
    schedule.step(batch)
elif rank == world - 1:
    schedule.step(target=torch.zeros(8, 8))
else:
    schedule.step()
dist.destroy_process_group()
