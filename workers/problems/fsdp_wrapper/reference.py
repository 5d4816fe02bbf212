import torch
import torch.distributed as dist


def gather_parameters(shard, group):
    """All-gather the flat shards: rank r's shard lands at r·len(shard)."""
    full = torch.empty(shard.numel() * dist.get_world_size(group), dtype=shard.dtype)
    dist.all_gather_single(full, shard, group=group)
    return full


def reduce_gradients(full_grad, group):
    """Reduce-scatter the flat gradient (sum), keep this rank's shard, divide by the ranks."""
    world = dist.get_world_size(group)
    shard = torch.empty(full_grad.numel() // world, dtype=full_grad.dtype)
    dist.reduce_scatter_single(shard, full_grad.contiguous(), group=group)
    return shard / world
