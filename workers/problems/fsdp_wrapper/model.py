"""The model both halves share: one linear layer W [OUT, IN] kept as a flat vector cut in `world`
equal shards (rank r holds elements r·N/p … (r+1)·N/p − 1), each rank with its own batch.

    W flat  [ rank 0 | rank 1 | rank 2 | rank 3 ]      N = OUT·IN = 512, a shard 128
"""

import torch

OUT, IN, BATCH = 16, 32, 6
N = OUT * IN


def full_weight() -> torch.Tensor:
    return torch.randn(N, generator=torch.Generator().manual_seed(14))                     # [N]


def batch(rank: int) -> torch.Tensor:
    return torch.randn(BATCH, IN, generator=torch.Generator().manual_seed(100 + rank))      # [B, IN]


def loss(flat_weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x @ flat_weight.view(OUT, IN).T).square().mean()


def shard(flat: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    return flat.chunk(world)[rank]
