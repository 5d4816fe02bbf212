"""The layer both halves share: T tokens of width D on each rank, each routed (top-1) to one of
`world` experts; expert e lives on rank e and multiplies by its own matrix W_e [D, D].

    rank r: tokens [T, D] ──dispatch──▶ rank e: the tokens routed to e ──× W_e──▶ ──combine──▶ rank r
"""

import torch

T, D = 64, 32


def tokens(rank: int) -> torch.Tensor:
    return torch.randn(T, D, generator=torch.Generator().manual_seed(300 + rank))                # [T, D]


def experts(rank: int, world: int) -> torch.Tensor:
    return torch.randint(0, world, (T,), generator=torch.Generator().manual_seed(400 + rank))     # [T]


def expert_weight(expert: int) -> torch.Tensor:
    return torch.randn(D, D, generator=torch.Generator().manual_seed(500 + expert)) / D ** 0.5   # [D, D]
