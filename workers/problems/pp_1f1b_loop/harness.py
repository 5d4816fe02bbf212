"""On each rank, inside the sandbox: run the learner's 1F1B loop on paralab's pipeline engine and
report the loss, the gradients, the order of forwards and backwards and the activations held.
Nothing here decides a verdict (see verify.py)."""

import torch
import torch.nn.functional as F

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


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)                                      # the same batch on every rank
    return torch.randn(M * ROWS, HIDDEN), torch.randn(M * ROWS, HIDDEN)


def run(lab, submission) -> dict:
    p, stage = lab.world_size, lab.rank
    layer = make_stack(p, HIDDEN, 0)[stage]
    x, y = batch()
    order = Order(stage)
    runner = StageRunner(lab, stage, layer, list(x.chunk(M)), list(y.chunk(M)), F.mse_loss, M, order)
    submission.one_f_one_b(runner)
    outputs = {f"stage {stage} {name} gradient": param.grad for name, param in layer.named_parameters()}
    if stage == p - 1:
        outputs["loss"] = torch.stack(runner.losses).sum()
    return {**outputs, "1F1B order": order.actions, "activations held": order.peak}
