import torch
import torch.distributed as dist


class GatherFromSequenceParallel(torch.autograd.Function):
    """All-gather along the sequence forward; reduce-scatter backward."""

    @staticmethod
    def forward(ctx, x, group):
        ...

    @staticmethod
    def backward(ctx, grad):
        ...


class ScatterToSequenceParallel(torch.autograd.Function):
    """Reduce-scatter along the sequence forward; all-gather backward."""

    @staticmethod
    def forward(ctx, x, group):
        ...

    @staticmethod
    def backward(ctx, grad):
        ...
