from workers.problems import Function, Problem

PROBLEM = Problem(
    id="ring_allreduce",
    title="Ring all-reduce from send/recv",
    world_size=4,
    lesson="ring_allreduce",
    functions=(
        Function("ring_all_reduce", "def ring_all_reduce(x: torch.Tensor, rank: int, world: int) -> torch.Tensor",
                 "Sum x over all ranks with a reduce-scatter then an all-gather around the ring r → r+1, "
                 "using only point-to-point calls; return the summed tensor."),
    ),
)
