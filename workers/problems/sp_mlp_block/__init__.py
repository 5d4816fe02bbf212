from workers.problems import Function, Problem

PROBLEM = Problem(
    id="sp_mlp_block",
    title="Sequence-parallel MLP block: forward, backward and communication",
    world_size=4,
    lesson="sp_mlp",
    functions=(
        Function("GatherFromSequenceParallel", "class GatherFromSequenceParallel(torch.autograd.Function): "
                 "forward(ctx, x, group) -> [S, H] from [S/t, H]; backward(ctx, grad) -> (grad_x, None)",
                 "Entering the TP region: all-gather the sequence shards forward; reduce-scatter backward."),
        Function("ScatterToSequenceParallel", "class ScatterToSequenceParallel(torch.autograd.Function): "
                 "forward(ctx, x, group) -> [S/t, H] from [S, H]; backward(ctx, grad) -> (grad_x, None)",
                 "Leaving the TP region: reduce-scatter the partial outputs forward; all-gather backward."),
    ),
)
