from workers.problems import Function, Problem

PROBLEM = Problem(
    id="fsdp_wrapper",
    title="An FSDP-style wrapper: all-gather the parameters, reduce-scatter the gradients",
    world_size=4,
    lesson="zero",
    functions=(
        Function("gather_parameters", "def gather_parameters(shard: torch.Tensor, group) -> torch.Tensor",
                 "Before the forward: all-gather every rank's flat shard into the full flat parameter, in rank order."),
        Function("reduce_gradients", "def reduce_gradients(full_grad: torch.Tensor, group) -> torch.Tensor",
                 "After the backward: reduce-scatter the full flat gradient; return this rank's shard of the "
                 "mean over the ranks."),
    ),
)
