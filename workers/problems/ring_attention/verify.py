"""The judge's side, outside the sandbox: causal attention over the whole sequence in one process,
and the ring's traffic against the reference's."""

from workers.problems.checks import Call, communication, compare
from workers.problems.ring_attention.model import HEAD_DIM, HEADS, S, block, causal_attention, qkv


def verify(rank: int, world: int, outputs: dict, calls: list[dict]) -> list[dict]:
    right, kv_block = (rank + 1) % world, (2, S // world, HEADS, HEAD_DIM)
    sends_and_collectives = [c for c in calls if c["op"] != "recv"]
    return [compare(rank, outputs, "output", block(causal_attention(*qkv()), rank, world),
                    "this rank's rows of causal attention over the whole sequence"),
            communication(rank, sends_and_collectives, [Call("send", "world", kv_block, right)] * (world - 1),
                          f"no collective; p − 1 = {world - 1} sends of the stacked K/V block to the right neighbour",
                          world, kinds=("collective", "p2p"))]
