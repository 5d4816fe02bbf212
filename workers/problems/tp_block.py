"""What the tensor-parallel problems share: this rank's leaves of the seed chapter's MLP block (its
shard of W1 and W2, the input — only its tokens under sequence parallelism — and the LayerNorm
weight), made on the rank, and the single-process reference they are checked against, computed by
the judge outside the sandbox."""

from dataclasses import dataclass

import torch

from workers.lessons.mlp_block import Reference, make_inputs, reference

S, H, FFN = 8, 16, 64


@dataclass
class Leaves:
    x: torch.Tensor
    ln_w: torch.Tensor
    w1: torch.Tensor
    w2: torch.Tensor


def shard(rank: int, world: int, sequence_parallel: bool = False) -> tuple[slice, slice]:
    """This rank's FFN columns, and its tokens (all of them without sequence parallelism)."""
    cols = slice(rank * FFN // world, (rank + 1) * FFN // world)
    rows = slice(rank * S // world, (rank + 1) * S // world) if sequence_parallel else slice(None)
    return cols, rows


def leaves(rank: int, world: int, sequence_parallel: bool = False) -> Leaves:
    full = make_inputs(S, H, FFN, 0)
    cols, rows = shard(rank, world, sequence_parallel)
    return Leaves(x=full.x[rows].clone().requires_grad_(), ln_w=full.ln_w.clone().requires_grad_(),
                  w1=full.w1[cols].clone().requires_grad_(), w2=full.w2[:, cols].clone().requires_grad_())


def expected() -> Reference:
    """The whole block in one process: `out` and `grads`."""
    return reference(make_inputs(S, H, FFN, 0))
