"""The judge's side, outside the sandbox: every token through its expert in one process, and the
communication against the reference's."""

import torch

from workers.problems.checks import Call, communication, compare, fact
from workers.problems.moe_dispatch.model import D, T, expert_weight, experts, tokens


def verify(rank: int, world: int, outputs: dict, calls: list[dict]) -> list[dict]:
    routed = experts(rank, world)
    expected = torch.stack([tokens(rank)[t] @ expert_weight(int(routed[t])) for t in range(T)])
    arriving = sum(int((experts(r, world) == rank).sum()) for r in range(world))
    held = outputs.get("tokens at this rank's expert")
    pattern = [Call("all_to_all", "ep", (world,), None, "int64"),          # how many tokens go to each rank
               Call("all_to_all", "ep", (T, D)),                           # the tokens, to their experts
               Call("all_to_all", "ep", (arriving, D))]                    # the experts' outputs, back
    return [compare(rank, outputs, "combined", expected, "each token's expert output, back in its own position"),
            fact(rank, "tokens at this rank's expert", held == arriving,
                 "this rank's expert receives every token routed to it", [str(arriving)], [str(held)]),
            communication(rank, calls, pattern, "the counts exchanged, the tokens dispatched, the outputs combined "
                          "back: three all-to-alls", world)]
