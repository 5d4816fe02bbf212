"""On each rank, inside the sandbox: one FSDP-style step with the learner's two functions — gather
the full parameter from the shards, run forward and backward on this rank's batch, reduce-scatter
the gradient — and report what came out. Nothing here decides a verdict (see verify.py)."""

from workers.problems.fsdp_wrapper.model import batch, full_weight, loss, shard


def run(lab, submission) -> dict:
    dp = lab.group("dp")
    own = shard(full_weight(), lab.rank, lab.world_size).clone()                 # [N/p]
    full = submission.gather_parameters(own, dp)                                 # [N]
    weight = full.detach().clone().requires_grad_(True)
    loss(weight, batch(lab.rank)).backward()
    return {"gathered parameters": full, "gradient shard": submission.reduce_gradients(weight.grad, dp)}
