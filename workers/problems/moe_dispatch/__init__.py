from workers.problems import Function, Problem

PROBLEM = Problem(
    id="moe_dispatch",
    title="Mixture of experts: dispatch the tokens to their experts and combine them back",
    world_size=4,
    lesson="expert_parallel",
    functions=(
        Function("dispatch", "def dispatch(tokens: torch.Tensor, experts: torch.Tensor, group) -> "
                 "tuple[torch.Tensor, object]",
                 "Send each token to the rank of its expert (expert e lives on rank e) with all_to_all_single "
                 "and uneven splits; return the tokens this rank received (grouped by source rank) and "
                 "whatever combine needs."),
        Function("combine", "def combine(expert_out: torch.Tensor, state, group) -> torch.Tensor",
                 "Send the experts' outputs back to the ranks the tokens came from and put each in its "
                 "token's original position."),
    ),
)
