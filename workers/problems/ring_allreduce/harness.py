"""Runs the learner's ring all-reduce and checks the sum and the traffic."""

import torch
import torch.distributed as dist

N_PER_RANK = 3


def run(lab, submission, calls):
    rank, world = lab.rank, lab.world_size
    n = N_PER_RANK * world
    x = torch.arange(n, dtype=torch.float32) + 10 * rank
    with lab.untraced():
        expected = x.clone()
        dist.all_reduce(expected)
    result = submission.ring_all_reduce(x.clone(), rank, world)
    lab.check("sum", result, expected, "the ring's result against dist.all_reduce on the same input")

    begins = [c for c in calls if c.get("phase") == "begin"]
    collectives = [c["op"] for c in begins if c["kind"] == "collective"]
    sends = [c for c in begins if c["kind"] == "p2p" and c["op"] == "send"]
    right = (rank + 1) % world
    wrong = [c for c in sends if c["peer"] != right or c["shape"] != [N_PER_RANK]]
    passed = not collectives and len(sends) == 2 * (world - 1) and not wrong
    lab.emit_event("check", name="communication", passed=passed,
                   detail=f"no collective; 2(p−1) = {2 * (world - 1)} sends of one chunk ({N_PER_RANK} elements) to rank {right}",
                   expected=[f"{2 * (world - 1)} × send to rank {right} of [{N_PER_RANK}]"],
                   performed=[f"{op} (collective)" for op in collectives]
                             + [f"send to rank {c['peer']} of {c['shape']}" for c in sends])
