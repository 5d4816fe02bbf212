from workers.problems import Function, Problem

PROBLEM = Problem(
    id="pp_1f1b_loop",
    title="The 1F1B schedule loop",
    world_size=4,
    lesson="pp",
    functions=(
        Function("one_f_one_b", "def one_f_one_b(runner) -> None",
                 "Run runner.forward(i) and runner.backward(i) for microbatches 0..runner.m−1 in 1F1B order "
                 "(warm-up, steady one-forward-one-backward, cool-down), then runner.finish()."),
    ),
)
