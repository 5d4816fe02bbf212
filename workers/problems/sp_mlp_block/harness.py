"""Runs the learner's sequence-parallel edges around LayerNorm + MLP and checks everything."""

import torch.distributed as dist
import torch.nn.functional as F

from workers.problems.checks import check_communication
from workers.problems.tp_block import H, S, leaves


def run(lab, submission, calls):
    tp = lab.group("tp")
    t = lab.world_size
    b = leaves(lab, sequence_parallel=True)
    h = submission.GatherFromSequenceParallel.apply(F.layer_norm(b.x, (H,), weight=b.ln_w), tp)
    y = submission.ScatterToSequenceParallel.apply(F.linear(F.gelu(F.linear(h, b.w1)), b.w2), tp)
    y.square().sum().backward()
    check_communication(lab, calls, [("all_gather", "tp", [S // t, H]), ("reduce_scatter", "tp", [S, H]),
                                     ("all_gather", "tp", [S // t, H]), ("reduce_scatter", "tp", [S, H])],
                        "forward: all-gather entering, reduce-scatter leaving; backward: the same two, reversed")
    dist.all_reduce(b.ln_w.grad, group=tp)                # the harness's part: LayerNorm's shared weight

    lab.check("output Y rows", y, b.ref.out[b.rows], "this rank's tokens of Y against one process")
    lab.check("input gradient dX rows", b.x.grad, b.ref.grads.x[b.rows], "dL/dX for this rank's tokens")
    lab.check("W1 shard gradient", b.w1.grad, b.ref.grads.w1[b.cols], "dL/dW1, this rank's rows")
    lab.check("W2 shard gradient", b.w2.grad, b.ref.grads.w2[:, b.cols], "dL/dW2, this rank's columns")
    lab.check("LayerNorm weight gradient", b.ln_w.grad, b.ref.grads.ln_w, "dL/dw summed over the shards")
