"""3D parallelism: one training step of nanotron's trainer, composed of all three.

    rank = dp·(pp·tp) + pp_rank·tp + tp_rank          (tensor-parallel ranks are neighbours)

    TP inside each stage: the MLP's W1 by columns, W2 by rows, f and g around it (the tp_mlp lesson);
    PP between stages:    1F1B over send/recv between the same tp_rank of neighbouring stages;
    DP after the schedule: the replicas average every gradient shard — once, after the last backward.

Two classic confusions about the DP sync inside a pipeline (`mistake`):
    sync_every_microbatch      right numbers, m times the DP traffic
    sync_before_last_backward  the last microbatch's gradient is never averaged: wrong gradients
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from workers import comm
from workers.lessons.pp.engine import StageRunner, one_f_one_b
from workers.lessons.tp_mlp.program import CopyToTensorParallel, ReduceFromTensorParallel

ROWS_PER_MICROBATCH = 2


def coordinates(rank, tp, pp):
    """(dp, pp_rank, tp_rank) of a global rank."""
    return rank // (pp * tp), rank // tp % pp, rank % tp


def build_groups(lab, p):
    """Every rank creates every group (torch requires it), then keeps the three it belongs to."""
    world = p.tp * p.pp * p.dp
    ranks_of = {
        "tp": [[d * p.pp * p.tp + s * p.tp + t for t in range(p.tp)] for d in range(p.dp) for s in range(p.pp)],
        "pp": [[d * p.pp * p.tp + s * p.tp + t for s in range(p.pp)] for d in range(p.dp) for t in range(p.tp)],
        "dp": [[d * p.pp * p.tp + s * p.tp + t for d in range(p.dp)] for s in range(p.pp) for t in range(p.tp)],
    }
    if lab.rank == 0:                                  # before any group exists: first in the log
        lab.emit_event("topology", tp=p.tp, pp=p.pp, dp=p.dp, groups=ranks_of,
                       coordinates=[coordinates(r, p.tp, p.pp) for r in range(world)])
    mine = {}
    for kind, groups in ranks_of.items():
        for index, members in enumerate(groups):
            group = lab.group(f"{kind}{index}" if lab.rank not in members else kind, members)
            if lab.rank in members:
                mine[kind] = (group, members)
    return mine


class TensorParallelBlock(nn.Module):
    """x + g(GELU(f(x)·W1ᵀ)·W2ᵀ) with this rank's columns of W1 and rows of W2."""

    def __init__(self, w1, w2, group):
        super().__init__()
        self.w1, self.w2, self.group = nn.Parameter(w1), nn.Parameter(w2), group

    def forward(self, x):
        h = F.gelu(F.linear(CopyToTensorParallel.apply(x, self.group), self.w1))
        return x + ReduceFromTensorParallel.apply(F.linear(h, self.w2), self.group)


def full_model(p):
    torch.manual_seed(p.seed)
    return [(torch.randn(p.ffn, p.hidden) / p.hidden ** 0.5, torch.randn(p.hidden, p.ffn) / p.ffn ** 0.5)
            for _ in range(p.pp)]


class DataParallelTraffic:
    bytes = 0


def sync_gradients(block, dp_group, dp, label):
    for name, param in block.named_parameters():
        comm.all_reduce(param.grad, group=dp_group, label=f"{label}: average {name}")
        param.grad /= dp
        DataParallelTraffic.bytes += param.grad.numel() * param.grad.element_size()


def run(lab, p):
    d, s, t = coordinates(lab.rank, p.tp, p.pp)
    groups = build_groups(lab, p)
    weights = full_model(p)
    cols = slice(t * p.ffn // p.tp, (t + 1) * p.ffn // p.tp)
    w1, w2 = weights[s]
    block = TensorParallelBlock(w1[cols].clone(), w2[:, cols].clone(), groups["tp"][0]).to(lab.device)

    torch.manual_seed(p.seed + 1)
    rows = p.dp * p.microbatches * ROWS_PER_MICROBATCH
    x, y = torch.randn(rows, p.hidden).to(lab.device), torch.randn(rows, p.hidden).to(lab.device)
    replica = slice(d * rows // p.dp, (d + 1) * rows // p.dp)          # this DP replica's samples
    inputs, targets = list(x[replica].chunk(p.microbatches)), list(y[replica].chunk(p.microbatches))

    runner = StageRunner(lab, s, block, inputs, targets, F.mse_loss, p.microbatches,
                         ranks=groups["pp"][1], group=groups["pp"][0])
    dp_group = groups["dp"][0]
    if p.mistake != "none":
        misplace_the_dp_sync(runner, block, dp_group, p)
    one_f_one_b(runner)
    if p.mistake == "none" and p.dp > 1:                                # one replica has nothing to average
        sync_gradients(block, dp_group, p.dp, "after the last backward")   # the right place: once, at the end

    check(lab, p, block, weights, x, y, s, cols, runner, dp_group)


def misplace_the_dp_sync(runner, block, dp_group, p):
    """The mistakes: wrap each backward with a DP sync in the wrong place."""
    backward = runner.backward

    def backward_with_sync(i):
        if p.mistake == "sync_before_last_backward" and i == p.microbatches - 1:
            sync_gradients(block, dp_group, p.dp, "too early: before the last backward")
        if p.mistake == "sync_every_microbatch":
            earlier = [param.grad for param in block.parameters()]
            for param in block.parameters():
                param.grad = None
        backward(i)
        if p.mistake == "sync_every_microbatch":                          # this microbatch's share only
            sync_gradients(block, dp_group, p.dp, f"after microbatch {i}")
            for param, grad in zip(block.parameters(), earlier):
                if grad is not None:
                    param.grad += grad

    runner.backward = backward_with_sync


def check(lab, p, block, weights, x, y, s, cols, runner, dp_group):
    """One process, the whole model, the whole batch."""
    layers = [[w.clone().requires_grad_() for w in pair] for pair in copy.deepcopy(weights)]
    h = x.cpu()
    for w1, w2 in layers:
        h = h + F.linear(F.gelu(F.linear(h, w1)), w2)
    loss = F.mse_loss(h, y.cpu())
    loss.backward()
    if runner.last:                                                    # each replica's loss: the mean over its rows
        replica_loss = torch.stack(runner.losses).sum().reshape(1)
        mean_loss = comm.all_reduce(replica_loss, group=dp_group, label="average the replicas' losses") / p.dp
        lab.check("loss", mean_loss[0], loss.detach(), "the replicas' mean loss against one process's loss")
    shards = sum(t.numel() * t.element_size() for t in block.parameters())
    lab.metric("dp_sync_bytes", DataParallelTraffic.bytes, "bytes", expected=shards if p.dp > 1 else 0,
               formula="one all-reduce of this rank's gradient shards; none at dp = 1 (one replica)")
    ref_w1, ref_w2 = layers[s]
    lab.check(f"stage {s} W1 shard gradient", block.w1.grad, ref_w1.grad[cols],
              f"dL/dW1 of stage {s}, this rank's columns, against one process on the whole batch")
    lab.check(f"stage {s} W2 shard gradient", block.w2.grad, ref_w2.grad[:, cols],
              f"dL/dW2 of stage {s}, this rank's rows, against one process on the whole batch")
