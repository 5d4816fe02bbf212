"""On each rank, inside the sandbox: run the learner's sequence-parallel edges around LayerNorm +
MLP and report what came out. Nothing here decides a verdict (see verify.py)."""

import torch.distributed as dist
import torch.nn.functional as F

from workers.problems.tp_block import H, leaves


def run(lab, submission) -> dict:
    tp = lab.group("tp")
    b = leaves(lab.rank, lab.world_size, sequence_parallel=True)
    h = submission.GatherFromSequenceParallel.apply(F.layer_norm(b.x, (H,), weight=b.ln_w), tp)
    y = submission.ScatterToSequenceParallel.apply(F.linear(F.gelu(F.linear(h, b.w1)), b.w2), tp)
    y.square().sum().backward()
    with lab.untraced():                                  # the harness's part: LayerNorm's shared weight
        dist.all_reduce(b.ln_w.grad, group=tp)
    return {"output Y rows": y, "input gradient dX rows": b.x.grad, "W1 shard gradient": b.w1.grad,
            "W2 shard gradient": b.w2.grad, "LayerNorm weight gradient": b.ln_w.grad}
