"""The LayerNorm + MLP block that the tensor- and sequence-parallel lessons split, and its
single-process reference.

    Y = GELU(LayerNorm(X) · W1ᵀ) · W2ᵀ        X: [S, H]   W1: [FFN, H]   W2: [H, FFN]

Every rank draws the same full inputs, in the seed chapter's order (x, LayerNorm weight, W1/√H,
W2/√FFN), so the numbers match the chapter's check, then computes the reference on its own.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class BlockInputs:
    x: torch.Tensor      # [S, H]
    ln_w: torch.Tensor   # [H]
    w1: torch.Tensor     # [FFN, H]
    w2: torch.Tensor     # [H, FFN]


@dataclass
class Reference:
    out: torch.Tensor    # [S, H]
    grads: BlockInputs   # the gradient of loss = sum(Y²) with respect to each input


def make_inputs(seq_len: int, hidden: int, ffn: int, seed: int, device="cpu") -> BlockInputs:
    torch.manual_seed(seed)
    x = torch.randn(seq_len, hidden)
    ln_w = torch.randn(hidden)
    w1 = torch.randn(ffn, hidden) / hidden ** 0.5
    w2 = torch.randn(hidden, ffn) / ffn ** 0.5
    return BlockInputs(*(t.to(device) for t in (x, ln_w, w1, w2)))


def block(x, ln_w, w1, w2):
    h = F.layer_norm(x, (x.shape[-1],), weight=ln_w)
    return F.linear(F.gelu(F.linear(h, w1)), w2)


def reference(inputs: BlockInputs) -> Reference:
    """One process, the whole block: the numbers every rank's shard is checked against."""
    leaves = [t.clone().requires_grad_() for t in (inputs.x, inputs.ln_w, inputs.w1, inputs.w2)]
    out = block(*leaves)
    out.square().sum().backward()
    return Reference(out.detach(), BlockInputs(*(t.grad for t in leaves)))
