from workers.problems import Function, Problem

PROBLEM = Problem(
    id="fg_operators",
    title="Megatron's f and g",
    world_size=4,
    lesson="tp_mlp",
    functions=(
        Function("CopyToTensorParallel", "class CopyToTensorParallel(torch.autograd.Function): "
                 "forward(ctx, x, group) -> x; backward(ctx, grad) -> (grad_x, None)",
                 "f: identity forward; backward all-reduces the input gradient over `group`."),
        Function("ReduceFromTensorParallel", "class ReduceFromTensorParallel(torch.autograd.Function): "
                 "forward(ctx, x, group) -> y; backward(ctx, grad) -> (grad_x, None)",
                 "g: forward all-reduces the partial outputs over `group`; identity backward."),
    ),
)
