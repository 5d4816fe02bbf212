"""The judge's side, outside the sandbox: the full parameter and every rank's gradient computed in
one process, and the communication against the reference's."""

import torch

from workers.problems.checks import communication, compare
from workers.problems.fsdp_wrapper.model import N, batch, full_weight, loss, shard


def mean_gradient(world: int) -> torch.Tensor:
    weight = full_weight().requires_grad_(True)
    sum(loss(weight, batch(r)) for r in range(world)).backward()
    return weight.grad / world                                                 # [N]


def verify(rank: int, world: int, outputs: dict, calls: list[dict]) -> list[dict]:
    return [compare(rank, outputs, "gathered parameters", full_weight(), "the full flat W, every shard in rank order"),
            compare(rank, outputs, "gradient shard", shard(mean_gradient(world), rank, world),
                    "this rank's shard of dL/dW averaged over every rank's batch"),
            communication(rank, calls, [("all_gather", "dp", [N // world]), ("reduce_scatter", "dp", [N])],
                          "one all-gather of a shard before the forward, one reduce-scatter of the gradient after "
                          "the backward", world)]
