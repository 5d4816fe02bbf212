"""On each rank, inside the sandbox: run the learner's ring all-reduce and report its result. The
traffic is what the tracer recorded. Nothing here decides a verdict (see verify.py)."""

import torch

N_PER_RANK = 1024                  # 4 KiB a chunk: the ring's traffic stands well above the connections' own packets


def rank_input(rank: int, world: int) -> torch.Tensor:
    return torch.arange(N_PER_RANK * world, dtype=torch.float32) + 10 * rank


def run(lab, submission) -> dict:
    return {"sum": submission.ring_all_reduce(rank_input(lab.rank, lab.world_size), lab.rank, lab.world_size)}
