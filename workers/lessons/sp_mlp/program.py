"""Sequence-parallel LayerNorm + MLP, after Korthikanti et al., 2022 ("Reducing Activation
Recomputation in Large Transformer Models").

Outside the tensor-parallel region (LayerNorm here) each rank keeps only S/t tokens. Entering the
region, an all-gather along the sequence rebuilds the whole X; leaving it, a reduce-scatter sums the
partial outputs and hands each rank its S/t tokens back. Same volume as one all-reduce, since an
all-reduce is a reduce-scatter followed by an all-gather, but LayerNorm's activations shrink t-fold.

    tokens 0..S/t   ──LayerNorm──┐                       ┌── Y tokens 0..S/t
    tokens S/t..2S/t ─LayerNorm──┼ all-gather ─ MLP slice ┼ reduce-scatter ── Y tokens S/t..2S/t
    …                            ┘  (whole X)   (local)   └── …

LayerNorm's weight is shared by every sequence shard, so each rank holds only its tokens' share of
dL/dw: one more all-reduce sums them.
"""

import torch
import torch.nn.functional as F

from workers import comm
from workers.lessons.mlp_block import SavedActivations, activation_terms, make_inputs, reference, report_activations


class GatherFromSequenceParallel(torch.autograd.Function):
    """Entering the TP region. Forward: all-gather the sequence shards into the whole X.
    Backward: reduce-scatter, summing dL/dX and keeping this rank's tokens."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return comm.all_gather(x, group=group, label="enter: all-gather the sequence")

    @staticmethod
    def backward(ctx, grad):
        return comm.reduce_scatter(grad, group=ctx.group, label="enter backward: reduce-scatter dL/dX"), None


class ScatterToSequenceParallel(torch.autograd.Function):
    """Leaving the TP region. Forward: reduce-scatter, summing the partial outputs and keeping this
    rank's tokens. Backward: all-gather dL/dY for the whole sequence."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return comm.reduce_scatter(x, group=group, label="leave: reduce-scatter the partial outputs")

    @staticmethod
    def backward(ctx, grad):
        return comm.all_gather(grad, group=ctx.group, label="leave backward: all-gather dL/dY"), None


def run(lab, p):
    tp = lab.group("tp")
    t, r = lab.world_size, lab.rank
    full = make_inputs(p.seq_len, p.hidden, p.ffn, p.seed, lab.device)   # same numbers on every rank
    ref = reference(full)
    cols = slice(r * p.ffn // t, (r + 1) * p.ffn // t)      # this rank's share of the FFN width
    rows = slice(r * p.seq_len // t, (r + 1) * p.seq_len // t)  # this rank's tokens

    x = full.x[rows].clone().requires_grad_()               # [S/t, H]  only this rank's tokens
    ln_w = full.ln_w.clone().requires_grad_()               # [H]       shared by every shard
    w1 = full.w1[cols].clone().requires_grad_()             # [FFN/t, H]
    w2 = full.w2[:, cols].clone().requires_grad_()          # [H, FFN/t]
    lab.show("X", x, inside="X", full_shape=full.x.shape, offset=(rows.start, 0))
    lab.show("W1", w1, inside="W1", full_shape=full.w1.shape, offset=(cols.start, 0))
    lab.show("W2", w2, inside="W2", full_shape=full.w2.shape, offset=(0, cols.start))

    with SavedActivations([ln_w, w1, w2]) as saved:          # what autograd keeps for backward
        with lab.compute("LayerNorm"):
            h = F.layer_norm(x, (p.hidden,), weight=ln_w)  # [S/t, H]  activations cut t-fold
        h = GatherFromSequenceParallel.apply(h, tp)         # [S, H]
        with lab.compute("X·W1ᵀ, GELU"):
            a = F.gelu(F.linear(h, w1))                     # [S, FFN/t]
        with lab.compute("A·W2ᵀ"):
            partial = F.linear(a, w2)                       # [S, H]  partial sum
        y = ScatterToSequenceParallel.apply(partial, tp)    # [S/t, H]  summed, this rank's tokens
        lab.show("Y", y, inside="Y", full_shape=ref.out.shape, offset=(rows.start, 0))

    with lab.compute("backward"):
        y.square().sum().backward()
    if p.mistake != "forget_ln_allreduce":
        comm.all_reduce(ln_w.grad, group=tp, label="sum the LayerNorm weight gradient")

    if r == 0:
        lab.metric("block_comm_bytes_expected", (4 * p.seq_len * p.hidden + p.hidden) * y.element_size(), "bytes",
                   formula="(all-gather + reduce-scatter) forward and backward, 4 × s·b·h, + h for LayerNorm's dw, × 4 B")

    report_activations(lab, saved, activation_terms(p.seq_len, p.hidden, p.ffn, t, sequence_parallel=True),
                       ln_input=x, w1_input=h, w2_input=a,
                       sizes=f"s={p.seq_len}, b=1, h={p.hidden}, f={p.ffn}, t={t}")

    lab.check("output Y shard", y, ref.out[rows], "this rank's tokens of Y against the same rows of the reference")
    lab.check("input gradient dX shard", x.grad, ref.grads.x[rows],
              "dL/dX for this rank's tokens against the same rows of the reference")
    lab.check("W1 shard gradient", w1.grad, ref.grads.w1[cols],
              "dL/dW1 for this rank's rows against the same rows of the reference gradient")
    lab.check("W2 shard gradient", w2.grad, ref.grads.w2[:, cols],
              "dL/dW2 for this rank's columns against the same columns of the reference gradient")
    lab.check("LayerNorm weight gradient", ln_w.grad, ref.grads.ln_w,
              "dL/dw of LayerNorm, summed over the sequence shards, against the reference")
