"""paralab's own pipeline engine: GPipe and 1F1B over send/recv between stage ranks, after
nanotron's `OneForwardOneBackwardPipelineEngine` (and Narayanan et al., 2021, for 1F1B).

Rank r holds stage r. Microbatch i flows forward through the stages, its loss comes back as
gradients through the stages in reverse.

    GPipe (all forwards, then all backwards): every stage keeps m activations alive.
    1F1B: warm-up of p − r − 1 forwards, then one forward and one backward in turn, then the
    remaining backwards — at most p − r activations alive on rank r. Same bubble, less memory.
"""

from contextlib import nullcontext

import torch

from workers import comm


class NoTiming:
    def forward(self, stage, mb):
        return nullcontext()

    def backward(self, stage, mb, kind="B"):
        return nullcontext()


class StageRunner:
    """One stage's forward and backward for one microbatch, with the sends and recvs around them.

    `ranks` lists the global rank of each stage (stage s on ranks[s]); `group` is the pipeline's
    process group (the world when the pipeline is the whole run)."""

    def __init__(self, lab, stage, model, inputs, targets, loss_fn, microbatches, timing=None,
                 ranks=None, group=None):
        self.lab, self.stage, self.model = lab, stage, model
        self.inputs, self.targets, self.loss_fn = inputs, targets, loss_fn
        self.m = microbatches
        self.timing = timing or NoTiming()                    # delays and activation bookkeeping
        self.ranks = ranks or list(range(lab.world_size))
        self.group = group
        self.num_stages = len(self.ranks)
        self.first, self.last = stage == 0, stage == self.num_stages - 1
        self.saved = {}                                       # microbatch → (input, output) kept for backward
        self.losses = []
        self.sends = []

    def forward(self, i):
        if self.first:
            x = self.inputs[i]
        else:
            x = comm.recv(torch.empty_like(self.inputs[i]), src=self.ranks[self.stage - 1], group=self.group,
                          label=f"recv activation of microbatch {i}")
        x.requires_grad_(not self.first)
        with self.lab.compute("F", stage=self.stage, microbatch=i), self.timing.forward(self.stage, i):
            y = self.model(x)
        if self.last:
            loss = self.loss_fn(y, self.targets[i]) / self.m     # the mean over microbatches, as the reference
            self.losses.append(loss.detach())
            y = loss
        else:
            self.sends.append(comm.isend(y.detach(), dst=self.ranks[self.stage + 1], group=self.group,
                                         label=f"send activation of microbatch {i}"))
        self.saved[i] = (x, y)

    def backward(self, i):
        x, y = self.saved.pop(i)
        grad = None if self.last else comm.recv(torch.empty_like(y), src=self.ranks[self.stage + 1],
                                                group=self.group, label=f"recv gradient of microbatch {i}")
        with self.lab.compute("B", stage=self.stage, microbatch=i), self.timing.backward(self.stage, i):
            torch.autograd.backward(y, grad)
        if not self.first:
            self.sends.append(comm.isend(x.grad, dst=self.ranks[self.stage - 1], group=self.group,
                                         label=f"send gradient of microbatch {i}"))

    def finish(self):
        for work in self.sends:
            work.wait()


def gpipe(runner):
    for i in range(runner.m):                                 # all forwards …
        runner.forward(i)
    for i in range(runner.m):                                 # … then all backwards
        runner.backward(i)
    runner.finish()


def one_f_one_b(runner):
    p, stage, m = runner.num_stages, runner.stage, runner.m
    warmup = min(p - stage - 1, m)
    for i in range(warmup):                                   # warm-up: fill the pipe
        runner.forward(i)
    for i in range(m - warmup):                               # steady: one forward, one backward
        runner.forward(warmup + i)
        runner.backward(i)
    for i in range(m - warmup, m):                            # cool-down: drain the backwards
        runner.backward(i)
    runner.finish()


ENGINES = {"gpipe": gpipe, "1f1b": one_f_one_b}
