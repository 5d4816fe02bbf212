"""Forging a verdict, 2: through the allowed `import workers.comm`, make every check in the rank
pass (Lab.check, and the comparer in case it runs here), then hand in wrong operators."""
import torch
import workers.comm

workers.lab.Lab.check = lambda self, *args, **kwargs: True
checks = __import__("workers.problems.checks", fromlist=["checks"])
checks.compare = lambda rank, outputs, name, expected, detail, **kw: checks.row(rank, name, True, detail)
checks.communication = lambda rank, calls, expected, detail: checks.row(rank, "communication", True, detail)


class CopyToTensorParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class ReduceFromTensorParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return x * 4                    # the wrong numbers, whatever a check inside would say

    @staticmethod
    def backward(ctx, grad):
        return grad, None
