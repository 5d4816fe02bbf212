"""Runs the learner's sequence-parallel edges around LayerNorm + MLP and checks everything."""

import torch.distributed as dist
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
    rows = slice(r * S // t, (r + 1) * S // t)
    x = full.x[rows].clone().requires_grad_()
    ln_w = full.ln_w.clone().requires_grad_()
    w1 = full.w1[cols].clone().requires_grad_()
    w2 = full.w2[:, cols].clone().requires_grad_()

    h = submission.GatherFromSequenceParallel.apply(F.layer_norm(x, (H,), weight=ln_w), tp)
    y = submission.ScatterToSequenceParallel.apply(F.linear(F.gelu(F.linear(h, w1)), w2), tp)
    y.square().sum().backward()
    check_communication(lab, calls, [("all_gather", "tp", [S // t, H]), ("reduce_scatter", "tp", [S, H]),
                                     ("all_gather", "tp", [S // t, H]), ("reduce_scatter", "tp", [S, H])],
                        "forward: all-gather entering, reduce-scatter leaving; backward: the same two, reversed")
    dist.all_reduce(ln_w.grad, group=tp)                  # the harness's part: LayerNorm's shared weight

    lab.check("output Y rows", y, ref.out[rows], "this rank's tokens of Y against one process")
    lab.check("input gradient dX rows", x.grad, ref.grads.x[rows], "dL/dX for this rank's tokens")
    lab.check("W1 shard gradient", w1.grad, ref.grads.w1[cols], "dL/dW1, this rank's rows")
    lab.check("W2 shard gradient", w2.grad, ref.grads.w2[:, cols], "dL/dW2, this rank's columns")
    lab.check("LayerNorm weight gradient", ln_w.grad, ref.grads.ln_w, "dL/dw summed over the shards")
