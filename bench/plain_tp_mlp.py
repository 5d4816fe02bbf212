"""The tp_mlp lesson's computation as a plain torch.distributed script, for `torchrun` to run:
the peer that bench/run_latency.py measures paralab against. No tracing, no events."""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank, t = dist.get_rank(), dist.get_world_size()
S, H, FFN = 8, 16, 64

torch.manual_seed(0)
x_full, ln_w = torch.randn(S, H), torch.randn(H)
w1, w2 = torch.randn(FFN, H) / H ** 0.5, torch.randn(H, FFN) / FFN ** 0.5
cols = slice(rank * FFN // t, (rank + 1) * FFN // t)


class F_(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        g = g.clone()
        dist.all_reduce(g)
        return g


class G_(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


ref = [v.clone().requires_grad_() for v in (x_full, ln_w, w1, w2)]
out_ref = F.linear(F.gelu(F.linear(F.layer_norm(ref[0], (H,), weight=ref[1]), ref[2])), ref[3])
out_ref.square().sum().backward()

x, lw = x_full.clone().requires_grad_(), ln_w.clone().requires_grad_()
w1_s, w2_s = w1[cols].clone().requires_grad_(), w2[:, cols].clone().requires_grad_()
out = G_.apply(F.linear(F.gelu(F.linear(F_.apply(F.layer_norm(x, (H,), weight=lw)), w1_s)), w2_s))
out.square().sum().backward()
ok = torch.allclose(out, out_ref, atol=1e-5) and torch.allclose(w1_s.grad, ref[2].grad[cols], atol=1e-5)
flag = torch.tensor([int(ok)])
dist.all_reduce(flag, op=dist.ReduceOp.MIN)
if rank == 0 and os.environ.get("PLAIN_VERBOSE"):
    print("checks passed:", bool(flag))
dist.destroy_process_group()
