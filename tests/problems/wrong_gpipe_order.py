def one_f_one_b(runner):
    """All forwards, then all backwards: right numbers, m activations held."""
    for i in range(runner.m):
        runner.forward(i)
    for i in range(runner.m):
        runner.backward(i)
    runner.finish()
