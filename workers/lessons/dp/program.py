"""Data parallelism: every rank holds the whole model and trains on its own slice of the batch;
averaging the gradients makes every rank take the same step as one process on the whole batch.

Naive (as nanotron's `sync_gradients`): after backward, one all-reduce per gradient, then divide by
the number of ranks. Bucketed (as PyTorch DDP, Li et al., 2020): gradients become ready layer by
layer during backward, last layer first; as soon as a bucket of them is complete its all-reduce is
launched in the background, so communication overlaps the backward of the earlier layers.

    rank 0  backward: layer 3 │ layer 2 │ layer 1 │ layer 0 │
    bucket A (layers 3, 2)    └── all-reduce ──────────┘              overlaps layers 1, 0
    bucket B (layers 1, 0)                          └── all-reduce ──┘
"""

import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from workers import comm

LR = 0.1


def make_model(layers, hidden, seed):
    torch.manual_seed(seed)                                    # the same initial weights on every rank
    return nn.Sequential(*[nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()) for _ in range(layers)])


def sync_gradients(model, world):
    """Naive data parallel: after backward, average each gradient across the ranks."""
    for name, param in model.named_parameters():
        comm.all_reduce(param.grad, label=f"average the gradient of {name}")
        param.grad /= world                                    # gloo has no AVG: sum, then divide


class BucketedGradientSync:
    """Bucketed data parallel: all-reduce buckets of gradients as soon as they are ready."""

    def __init__(self, model, bucket_size, world):
        self.world = world
        params = [p for p in model.parameters()]
        self.buckets, current, size = [], [], 0
        for param in reversed(params):                         # backward produces the last layer's first
            current.append(param)
            size += param.numel()
            if size >= bucket_size:
                self.buckets.append(current)
                current, size = [], 0
        if current:
            self.buckets.append(current)
        self.bucket_of = {param: b for b, bucket in enumerate(self.buckets) for param in bucket}
        self.ready = [0] * len(self.buckets)
        self.launched = []                                     # (work, bucket, flat gradients)
        for param in params:
            param.register_post_accumulate_grad_hook(self.on_gradient_ready)

    def on_gradient_ready(self, param):
        b = self.bucket_of[param]
        self.ready[b] += 1
        if self.ready[b] == len(self.buckets[b]):              # the bucket is complete: send it now
            flat = torch.cat([p.grad.flatten() for p in self.buckets[b]])
            work = comm.all_reduce_start(flat, label=f"bucket {b}: {flat.numel()} gradient elements", fields={"bucket": b})
            self.launched.append((work, b, flat))

    def finish(self):
        """Wait for every bucket, then copy the averaged gradients back."""
        for work, b, flat in self.launched:
            work.wait()
            flat /= self.world
            offset = 0
            for param in self.buckets[b]:
                param.grad.copy_(flat[offset:offset + param.numel()].view_as(param))
                offset += param.numel()


def time_each_layer_backward(lab, model, delay_s):
    """Compute spans for each layer's backward (plus a delay, so the overlap is visible)."""
    for index, layer in enumerate(model):
        layer.register_full_backward_pre_hook(lambda m, g, i=index: lab.compute_edge("begin", f"B layer {i}"))

        def done(module, grad_in, grad_out, i=index):
            time.sleep(delay_s)
            lab.compute_edge("end", f"B layer {i}")
        layer.register_full_backward_hook(done)


def run(lab, p):
    world, rank = lab.world_size, lab.rank
    model = make_model(p.layers, p.hidden, p.seed).to(lab.device)
    reference = copy.deepcopy(model)
    torch.manual_seed(p.seed + 1)
    x = torch.randn(world * p.batch_per_rank, p.hidden).to(lab.device)     # the global batch
    y = torch.randn(world * p.batch_per_rank, p.hidden).to(lab.device)
    mine = slice(rank * p.batch_per_rank, (rank + 1) * p.batch_per_rank)  # this rank's slice

    time_each_layer_backward(lab, model, p.delay_ms / 1000)
    bucketed = BucketedGradientSync(model, p.bucket_size, world) if p.bucketed else None
    with lab.compute("forward"):
        loss = F.mse_loss(model(x[mine]), y[mine])
    loss.backward()
    if bucketed:
        bucketed.finish()
    else:
        sync_gradients(model, world)
    with lab.compute("optimizer step"), torch.no_grad():
        for param in model.parameters():
            param -= LR * param.grad                           # plain SGD

    F.mse_loss(reference(x), y).backward()                     # one process, the whole batch
    with torch.no_grad():
        for param in reference.parameters():
            param -= LR * param.grad
    for (name, param), ref in zip(model.named_parameters(), reference.parameters()):
        lab.check(f"{name} after the step", param, ref,
                  f"rank {rank}'s {name} after one SGD step against one process trained on the whole batch")
