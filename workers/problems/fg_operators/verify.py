"""The judge's side, outside the sandbox: one rank's outputs against one process's block."""

from workers.problems.checks import communication, compare
from workers.problems.tp_block import H, S, expected, shard


def verify(rank: int, world: int, outputs: dict, calls: list[dict]) -> list[dict]:
    ref, (cols, _) = expected(), shard(rank, world)
    return [compare(rank, outputs, "output Y", ref.out, "this rank's Y against one process"),
            compare(rank, outputs, "W1 shard gradient", ref.grads.w1[cols], "dL/dW1, this rank's rows"),
            compare(rank, outputs, "W2 shard gradient", ref.grads.w2[:, cols], "dL/dW2, this rank's columns"),
            compare(rank, outputs, "input gradient dX", ref.grads.x, "dL/dX after f's backward"),
            communication(rank, calls, [("all_reduce", "tp", [S, H]), ("all_reduce", "tp", [S, H])],
                          "one all-reduce of [S, H] forward (g) and one backward (f)", world)]
