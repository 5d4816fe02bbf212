from workers.problems import Function, Problem

PROBLEM = Problem(
    id="ring_attention",
    title="Ring attention: pass the K/V blocks around the ring, merge with an online softmax",
    world_size=4,
    lesson="context_parallel",
    functions=(
        Function("ring_attention", "def ring_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, "
                 "rank: int, world: int) -> torch.Tensor",
                 "Causal attention of this rank's queries over the whole sequence: send the K/V block "
                 "(stacked, [2, S/p, h, d]) to rank + 1 and receive the next from rank − 1, world − 1 "
                 "times; merge each block's partial result with an online softmax; return out [S/p, h, d]."),
    ),
)
