"""What the tensor-parallel problems' harnesses share: this rank's leaves of the seed chapter's MLP
block (its shard of W1 and W2, the input — only its tokens under sequence parallelism — and the
LayerNorm weight) and the single-process reference to check them against."""

from dataclasses import dataclass

import torch

from workers.lessons.mlp_block import make_inputs, reference

S, H, FFN = 8, 16, 64


@dataclass
class Leaves:
    x: torch.Tensor
    ln_w: torch.Tensor
    w1: torch.Tensor
    w2: torch.Tensor
    ref: object        # the reference: `out` and `grads`
    cols: slice        # this rank's FFN columns
    rows: slice        # this rank's tokens (all of them without sequence parallelism)


def leaves(lab, sequence_parallel: bool = False) -> Leaves:
    t, r = lab.world_size, lab.rank
    full = make_inputs(S, H, FFN, 0)
    cols = slice(r * FFN // t, (r + 1) * FFN // t)
    rows = slice(r * S // t, (r + 1) * S // t) if sequence_parallel else slice(None)
    return Leaves(x=full.x[rows].clone().requires_grad_(), ln_w=full.ln_w.clone().requires_grad_(),
                  w1=full.w1[cols].clone().requires_grad_(), w2=full.w2[:, cols].clone().requires_grad_(),
                  ref=reference(full), cols=cols, rows=rows)
