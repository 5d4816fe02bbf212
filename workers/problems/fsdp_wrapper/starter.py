import torch
import torch.distributed as dist


def gather_parameters(shard, group):
    """All-gather the flat shards: rank r's shard lands at r·len(shard)."""
    ...


def reduce_gradients(full_grad, group):
    """Reduce-scatter the flat gradient (sum), keep this rank's shard, divide by the ranks."""
    ...
