"""The judge's side, outside the sandbox: the sum computed in one process, and the traffic."""

from workers.problems.checks import compare, fact
from workers.problems.ring_allreduce.harness import N_PER_RANK, rank_input


def verify(rank: int, world: int, outputs: dict, calls: list[dict]) -> list[dict]:
    expected = sum(rank_input(r, world) for r in range(world))
    collectives = [c["op"] for c in calls if c["kind"] == "collective"]
    sends = [c for c in calls if c["kind"] == "p2p" and c["op"] == "send"]
    right = (rank + 1) % world
    wrong = [c for c in sends if c["peer"] != right or c["shape"] != [N_PER_RANK]]
    passed = not collectives and len(sends) == 2 * (world - 1) and not wrong
    return [compare(rank, outputs, "sum", expected, "the ring's result against the sum of every rank's input"),
            fact(rank, "communication", passed,
                 f"no collective; 2(p−1) = {2 * (world - 1)} sends of one chunk ({N_PER_RANK} elements), each rank to "
                 "the next, rank + 1 mod p",   # one sentence for every rank: the page shows the check once for all
                 [f"{2 * (world - 1)} × send to rank {right} of [{N_PER_RANK}]"],
                 [f"{op} (collective)" for op in collectives] + [f"send to rank {c['peer']} of {c['shape']}" for c in sends])]
