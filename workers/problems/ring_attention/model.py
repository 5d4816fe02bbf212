"""The attention both halves share: a sequence of S tokens, h heads of width d, split contiguously
over the ranks (rank r holds tokens r·S/p … (r+1)·S/p − 1 of Q, K and V), causal.

    tokens   [ rank 0 | rank 1 | rank 2 | rank 3 ]      S = 64, a block 16
"""

import math

import torch

S, HEADS, HEAD_DIM = 64, 2, 8


def qkv() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(600)
    return tuple(torch.randn(S, HEADS, HEAD_DIM, generator=g) for _ in "qkv")              # [S, h, d] each


def block(x: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    return x.chunk(world)[rank].clone()                                                 # [S/p, h, d]


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """One process, the whole sequence: out [S, h, d]."""
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(torch.ones(len(q), len(k), dtype=torch.bool).triu(1), float("-inf"))
    return torch.einsum("hqk,khd->qhd", torch.softmax(scores, dim=-1), v)
