"""Runs the learner's f and g around a tensor-parallel MLP block and checks everything."""

import torch.nn.functional as F

from workers.problems.checks import check_communication
from workers.problems.tp_block import H, S, leaves


def run(lab, submission, calls):
    tp = lab.group("tp")
    b = leaves(lab)
    h = submission.CopyToTensorParallel.apply(F.layer_norm(b.x, (H,), weight=b.ln_w), tp)
    y = submission.ReduceFromTensorParallel.apply(F.linear(F.gelu(F.linear(h, b.w1)), b.w2), tp)
    y.square().sum().backward()

    lab.check("output Y", y, b.ref.out, "this rank's Y against one process")
    lab.check("W1 shard gradient", b.w1.grad, b.ref.grads.w1[b.cols], "dL/dW1, this rank's rows")
    lab.check("W2 shard gradient", b.w2.grad, b.ref.grads.w2[:, b.cols], "dL/dW2, this rank's columns")
    lab.check("input gradient dX", b.x.grad, b.ref.grads.x, "dL/dX after f's backward")
    check_communication(lab, calls, [("all_reduce", "tp", [S, H]), ("all_reduce", "tp", [S, H])],
                        "one all-reduce of [S, H] forward (g) and one backward (f)")
