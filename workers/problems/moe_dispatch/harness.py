"""On each rank, inside the sandbox: route this rank's tokens with the learner's dispatch, run this
rank's expert on what arrived, combine back, and report what came out. Nothing here decides a
verdict (see verify.py)."""

from workers.problems.moe_dispatch.model import expert_weight, experts, tokens


def run(lab, submission) -> dict:
    ep = lab.group("ep")
    received, state = submission.dispatch(tokens(lab.rank), experts(lab.rank, lab.world_size), ep)
    out = received @ expert_weight(lab.rank)                                   # [tokens routed here, D]
    return {"tokens at this rank's expert": received.shape[0], "combined": submission.combine(out, state, ep)}
