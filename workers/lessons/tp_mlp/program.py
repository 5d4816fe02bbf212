"""Tensor-parallel MLP, after Megatron-LM (Shoeybi et al., 2019, section 3).

W1 is split by output columns (rows of the [FFN, H] weight), W2 by input rows, so each rank's slice
of the FFN width flows from W1 through GELU into W2 without any communication:

        X [S, H] ─── f ───┬───────────────┬─── … ───┐        f: identity forward,
                          │ rank 0        │ rank 1  │           all-reduce backward
            W1[0:FFN/t]ᵀ  ▼   W1[FFN/t:…]ᵀ▼         ▼
                     GELU (local)    GELU (local)
            W2[:, 0:FFN/t]ᵀ ▼  W2[:, FFN/t:…]ᵀ ▼    ▼
                    partial Y₀      partial Y₁   …
                          └─────── g ─────┴─────────┘        g: all-reduce forward,
                                Y [S, H]                        identity backward
"""

import torch
import torch.nn.functional as F

from workers import comm
from workers.lessons.mlp_block import SavedActivations, activation_terms, make_inputs, reference, report_activations


class CopyToTensorParallel(torch.autograd.Function):
    """Megatron's f. Forward: identity, every rank takes the same X. Backward: each rank holds only
    its slice's share of dL/dX, so the shares are summed with an all-reduce."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = comm.all_reduce(grad.clone(), group=ctx.group, label="f backward: sum the input gradients")
        return grad, None


class ReduceFromTensorParallel(torch.autograd.Function):
    """Megatron's g. Forward: all-reduce, summing each rank's partial Y. Backward: identity, every
    rank already needs the whole dL/dY."""

    @staticmethod
    def forward(ctx, x, group):
        return comm.all_reduce(x.clone(), group=group, label="g forward: sum the partial outputs")

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def run(lab, p):
    tp = lab.group("tp")                                   # all ranks form one tensor-parallel group
    t, r = lab.world_size, lab.rank
    full = make_inputs(p.seq_len, p.hidden, p.ffn, p.seed, lab.device)   # same numbers on every rank
    ref = reference(full)
    cols = slice(r * p.ffn // t, (r + 1) * p.ffn // t)     # this rank's share of the FFN width

    x = full.x.clone().requires_grad_()                    # [S, H], whole on every rank
    ln_w = full.ln_w.clone().requires_grad_()              # [H]
    w1 = full.w1[cols].clone().requires_grad_()            # [FFN/t, H]  output columns of X·W1ᵀ
    w2 = full.w2[:, cols].clone().requires_grad_()         # [H, FFN/t]  input rows of A·W2ᵀ
    lab.show("W1", w1, inside="W1", full_shape=full.w1.shape, offset=(cols.start, 0))
    lab.show("W2", w2, inside="W2", full_shape=full.w2.shape, offset=(0, cols.start))

    f, g = CopyToTensorParallel, ReduceFromTensorParallel
    if p.mistake == "swap_f_g":
        f, g = g, f                                        # the bug: g where f belongs, and f for g

    with SavedActivations([ln_w, w1, w2]) as saved:          # what autograd keeps for backward
        with lab.compute("LayerNorm"):
            h = F.layer_norm(x, (p.hidden,), weight=ln_w)     # [S, H]
        h = f.apply(h, tp)
        with lab.compute("X·W1ᵀ, GELU"):
            a = F.gelu(F.linear(h, w1))                    # [S, FFN/t]  no communication: GELU is element-wise
        lab.show("A = GELU(X·W1ᵀ)", a, inside="A", full_shape=(p.seq_len, p.ffn), offset=(0, cols.start))
        with lab.compute("A·W2ᵀ"):
            partial = F.linear(a, w2)                      # [S, H]  this rank's partial sum of Y
        lab.show("partial Y", partial)
        y = g.apply(partial, tp)                           # [S, H]  the whole Y on every rank
        lab.show("Y", y)

    with lab.compute("backward"):
        y.square().sum().backward()                        # loss = sum(Y²), as in the reference

    if r == 0:                                             # what the chapter predicts each rank sends
        lab.metric("block_comm_bytes_expected", 2 * p.seq_len * p.hidden * y.element_size(), "bytes",
                   formula="2 all-reduces (g forward, f backward) × s·b·h elements × 4 B")

    report_activations(lab, saved, activation_terms(p.seq_len, p.hidden, p.ffn, t, sequence_parallel=False),
                       ln_input=x, w1_input=h, w2_input=a,
                       sizes=f"s={p.seq_len}, b=1, h={p.hidden}, f={p.ffn}, t={t}")

    lab.check("output Y", y, ref.out, "this rank's Y against the single-process Y")
    lab.check("W1 shard gradient", w1.grad, ref.grads.w1[cols],
              "dL/dW1 for this rank's rows against the same rows of the reference gradient")
    lab.check("W2 shard gradient", w2.grad, ref.grads.w2[:, cols],
              "dL/dW2 for this rank's columns against the same columns of the reference gradient")
    lab.check("input gradient dX", x.grad, ref.grads.x,
              "dL/dX on this rank (after f's backward all-reduce) against the reference dL/dX")
