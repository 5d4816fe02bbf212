"""Forging a verdict, 1: print passing check lines while loading, then exit before any rank runs.
The operators themselves are wrong (no communication at all)."""
import torch

json = __import__("json")
os = __import__("os")
for rank in range(4):
    for name in ("output Y", "W1 shard gradient", "W2 shard gradient", "input gradient dX", "communication"):
        print(json.dumps({"kind": "check", "rank": rank, "name": name, "passed": True, "detail": "forged"}), flush=True)
os._exit(0)


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
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None
