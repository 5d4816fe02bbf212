"""Runs the learner's 1F1B loop on paralab's pipeline engine and checks numbers, order and memory."""

import copy

import torch
import torch.nn.functional as F

from workers.lessons.pp import schedules
from workers.lessons.pp.engine import StageRunner
from workers.lessons.pp.program import make_stack

M, HIDDEN, ROWS = 8, 16, 2


class Order:
    """Records the order of forwards and backwards and the activations held."""

    def __init__(self, stage):
        self.stage, self.actions, self.held, self.peak = stage, [], 0, 0

    def forward(self, stage, mb):
        self.actions.append(f"{stage}F{mb}")
        self.held += 1
        self.peak = max(self.peak, self.held)
        return torch.enable_grad()

    def backward(self, stage, mb, kind="B"):
        self.actions.append(f"{stage}B{mb}")
        self.held -= 1
        return torch.enable_grad()


def run(lab, submission, calls):
    p, stage = lab.world_size, lab.rank
    layers = make_stack(p, HIDDEN, 0)
    reference = copy.deepcopy(layers)
    torch.manual_seed(1)                                      # the same batch on every rank
    x, y = torch.randn(M * ROWS, HIDDEN), torch.randn(M * ROWS, HIDDEN)
    order = Order(stage)
    runner = StageRunner(lab, stage, layers[stage], list(x.chunk(M)), list(y.chunk(M)), F.mse_loss, M, order)
    submission.one_f_one_b(runner)

    out = x
    for layer in reference:
        out = layer(out)
    ref_loss = sum(F.mse_loss(o, t) / M for o, t in zip(out.chunk(M), y.chunk(M)))
    ref_loss.backward()
    if stage == p - 1:
        lab.check("loss", torch.stack(runner.losses).sum(), ref_loss.detach(), "the pipeline's loss against one process")
    for (name, param), ref in zip(layers[stage].named_parameters(), reference[stage].parameters()):
        lab.check(f"stage {stage} {name} gradient", param.grad, ref.grad, "against one process on the whole batch")
    expected = schedules.own_actions("1f1b", p, M)[stage]
    lab.emit_event("check", name="1F1B order", passed=order.actions == expected,
                   detail=f"stage {stage}: warm-up of {p - stage - 1} forwards, then alternate, then cool-down",
                   expected=expected, performed=order.actions)
    lab.emit_event("check", name="activations held", passed=order.peak <= p - stage,
                   detail=f"stage {stage} may hold at most p − stage = {p - stage} microbatches; it held {order.peak}",
                   expected=[f"≤ {p - stage}"], performed=[str(order.peak)])
