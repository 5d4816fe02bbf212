def one_f_one_b(runner):
    """1F1B for one stage: warm-up, steady one-forward-one-backward, cool-down."""
    p, stage, m = runner.num_stages, runner.stage, runner.m
    ...
    runner.finish()
