def one_f_one_b(runner):
    """1F1B for one stage: warm-up, steady one-forward-one-backward, cool-down."""
    p, stage, m = runner.num_stages, runner.stage, runner.m
    warmup = min(p - stage, m)                  # one forward too many
    for i in range(warmup):
        runner.forward(i)
    for i in range(m - warmup):
        runner.forward(warmup + i)
        runner.backward(i)
    for i in range(m - warmup, m):
        runner.backward(i)
    runner.finish()
