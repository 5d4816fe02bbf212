"""On each rank, inside the sandbox: run the learner's f and g around a tensor-parallel MLP block
and report what came out. Nothing here decides a verdict (see verify.py)."""

import torch.nn.functional as F

from workers.problems.tp_block import H, leaves


def run(lab, submission) -> dict:
    tp = lab.group("tp")
    b = leaves(lab.rank, lab.world_size)
    h = submission.CopyToTensorParallel.apply(F.layer_norm(b.x, (H,), weight=b.ln_w), tp)
    y = submission.ReduceFromTensorParallel.apply(F.linear(F.gelu(F.linear(h, b.w1)), b.w2), tp)
    y.square().sum().backward()
    return {"output Y": y, "W1 shard gradient": b.w1.grad, "W2 shard gradient": b.w2.grad,
            "input gradient dX": b.x.grad}
