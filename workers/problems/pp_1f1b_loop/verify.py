"""The judge's side, outside the sandbox: the loss and gradients of the whole stack in one process,
and the order and memory the rule allows."""

import torch.nn.functional as F

from workers.lessons.pp import schedules
from workers.lessons.pp.program import make_stack
from workers.problems.checks import compare, fact
from workers.problems.pp_1f1b_loop.harness import HIDDEN, M, batch


def verify(rank: int, world: int, outputs: dict, calls: list[dict]) -> list[dict]:
    p, stage = world, rank
    layers = make_stack(p, HIDDEN, 0)
    x, y = batch()
    out = x
    for layer in layers:
        out = layer(out)
    loss = sum(F.mse_loss(o, t) / M for o, t in zip(out.chunk(M), y.chunk(M)))
    loss.backward()
    rows = [compare(rank, outputs, "loss", loss.detach(), "the pipeline's loss against one process")] if stage == p - 1 else []
    rows += [compare(rank, outputs, f"stage {stage} {name} gradient", param.grad, "against one process on the whole batch")
             for name, param in layers[stage].named_parameters()]
    order, peak = outputs.get("1F1B order"), outputs.get("activations held")
    expected = schedules.own_actions("1f1b", p, M)[stage]
    rows.append(fact(rank, "1F1B order", order == expected,
                     f"stage {stage}: warm-up of {p - stage - 1} forwards, then alternate, then cool-down",
                     expected, order if isinstance(order, list) else [str(order)]))
    rows.append(fact(rank, "activations held", isinstance(peak, int) and peak <= p - stage,
                     f"stage {stage} may hold at most p − stage = {p - stage} microbatches; it held {peak}",
                     [f"≤ {p - stage}"], [str(peak)]))
    return rows
