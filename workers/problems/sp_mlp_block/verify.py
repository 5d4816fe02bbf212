"""The judge's side, outside the sandbox: one rank's outputs against one process's block."""

from workers.problems.checks import communication, compare
from workers.problems.tp_block import H, S, expected, shard


def verify(rank: int, world: int, outputs: dict, calls: list[dict]) -> list[dict]:
    ref, (cols, rows) = expected(), shard(rank, world, sequence_parallel=True)
    return [communication(rank, calls, [("all_gather", "tp", [S // world, H]), ("reduce_scatter", "tp", [S, H]),
                                        ("all_gather", "tp", [S // world, H]), ("reduce_scatter", "tp", [S, H])],
                          "forward: all-gather entering, reduce-scatter leaving; backward: the same two, reversed", world),
            compare(rank, outputs, "output Y rows", ref.out[rows], "this rank's tokens of Y against one process"),
            compare(rank, outputs, "input gradient dX rows", ref.grads.x[rows], "dL/dX for this rank's tokens"),
            compare(rank, outputs, "W1 shard gradient", ref.grads.w1[cols], "dL/dW1, this rank's rows"),
            compare(rank, outputs, "W2 shard gradient", ref.grads.w2[:, cols], "dL/dW2, this rank's columns"),
            compare(rank, outputs, "LayerNorm weight gradient", ref.grads.ln_w, "dL/dw summed over the shards")]
