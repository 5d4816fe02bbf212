"""Runs the learner's f and g around a tensor-parallel MLP block and checks everything."""

import torch.nn.functional as F

from workers.lessons.mlp_block import make_inputs, reference
from workers.problems.checks import check_communication

S, H, FFN = 8, 16, 64


def run(lab, submission, calls):
    tp = lab.group("tp")
    t, r = lab.world_size, lab.rank
    full = make_inputs(S, H, FFN, 0)
    ref = reference(full)
    cols = slice(r * FFN // t, (r + 1) * FFN // t)
    x = full.x.clone().requires_grad_()
    ln_w = full.ln_w.clone().requires_grad_()
    w1 = full.w1[cols].clone().requires_grad_()
    w2 = full.w2[:, cols].clone().requires_grad_()

    h = submission.CopyToTensorParallel.apply(F.layer_norm(x, (H,), weight=ln_w), tp)
    y = submission.ReduceFromTensorParallel.apply(F.linear(F.gelu(F.linear(h, w1)), w2), tp)
    y.square().sum().backward()

    lab.check("output Y", y, ref.out, "this rank's Y against one process")
    lab.check("W1 shard gradient", w1.grad, ref.grads.w1[cols], "dL/dW1, this rank's rows")
    lab.check("W2 shard gradient", w2.grad, ref.grads.w2[:, cols], "dL/dW2, this rank's columns")
    lab.check("input gradient dX", x.grad, ref.grads.x, "dL/dX after f's backward")
    check_communication(lab, calls, [("all_reduce", "tp", [S, H]), ("all_reduce", "tp", [S, H])],
                        "one all-reduce of [S, H] forward (g) and one backward (f)")
