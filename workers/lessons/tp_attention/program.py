"""Tensor-parallel attention (Megatron-LM, section 3) with grouped-query attention (Ainslie et al., 2023).

Heads are independent, so each rank computes whole heads: Wq, Wk, Wv are split by output (heads),
Wo by input, and one all-reduce (g) sums the partial outputs — the MLP's pattern again.

    n_h = 8 query heads, n_kv = 2 KV heads, t = 4 ranks (GQA: 4 query heads share each KV head)
    rank      0        1        2        3
    queries   q0 q1    q2 q3    q4 q5    q6 q7
    KV head   kv0      kv0      kv1      kv1       ← n_kv < t: each KV head replicated on t/n_kv ranks

A replicated KV head's weight gets gradient from each replica's own queries only, so the replicas'
gradients are summed (all-reduce among the replicas) — and its KV cache is stored t/n_kv times.
"""

import torch
import torch.nn.functional as F

from workers import comm
from workers.lessons.tp_mlp.program import CopyToTensorParallel, ReduceFromTensorParallel


def attention(x, wq, wk, wv, wo, head_dim):
    """Causal attention over the heads these weights hold: x [S, H] → (partial output [S, H],
    the K cache [S, hkv·d] these heads keep)."""
    S = x.shape[0]
    keys = F.linear(x, wk)                                      # [S, hkv·d]: the K cache
    q = F.linear(x, wq).view(S, -1, head_dim).transpose(0, 1)   # [hq, S, d]
    k = keys.view(S, -1, head_dim).transpose(0, 1)              # [hkv, S, d]
    v = F.linear(x, wv).view(S, -1, head_dim).transpose(0, 1)
    group = q.shape[0] // k.shape[0]                            # queries per KV head
    k, v = k.repeat_interleave(group, 0), v.repeat_interleave(group, 0)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)   # [hq, S, d]
    return F.linear(out.transpose(0, 1).reshape(S, -1), wo), keys


def make_weights(p, device):
    torch.manual_seed(p.seed)
    H, d = p.heads * p.head_dim, p.head_dim
    x = torch.randn(p.seq_len, H)
    wq = torch.randn(p.heads * d, H) / H ** 0.5
    wk = torch.randn(p.kv_heads * d, H) / H ** 0.5
    wv = torch.randn(p.kv_heads * d, H) / H ** 0.5
    wo = torch.randn(H, p.heads * d) / H ** 0.5
    return [t.to(device) for t in (x, wq, wk, wv, wo)]


def run(lab, p):
    t, r, d = lab.world_size, lab.rank, p.head_dim
    tp = lab.group("tp")
    x_full, wq_full, wk_full, wv_full, wo_full = make_weights(p, lab.device)
    ref = [w.clone().requires_grad_() for w in (x_full, wq_full, wk_full, wv_full, wo_full)]
    ref_out, _ = attention(*ref, d)
    ref_out.square().sum().backward()

    q_heads = slice(r * p.heads // t * d, (r + 1) * p.heads // t * d)      # this rank's query heads
    replicas = max(t // p.kv_heads, 1)                                     # ranks sharing a KV head
    kv_first = r // replicas * max(p.kv_heads // t, 1)
    kv_heads = slice(kv_first * d, (kv_first + max(p.kv_heads // t, 1)) * d)

    x = x_full.clone().requires_grad_()
    wq = wq_full[q_heads].clone().requires_grad_()                         # [hq·d, H]
    wk = wk_full[kv_heads].clone().requires_grad_()                        # [hkv·d, H]  (replicated if n_kv < t)
    wv = wv_full[kv_heads].clone().requires_grad_()
    wo = wo_full[:, q_heads].clone().requires_grad_()                      # [H, hq·d]
    for name, w, full, rows in (("Wq", wq, wq_full, q_heads), ("Wk", wk, wk_full, kv_heads),
                                ("Wv", wv, wv_full, kv_heads)):
        lab.show(name, w, inside=name, full_shape=full.shape, offset=(rows.start, 0))
    lab.show("Wo", wo, inside="Wo", full_shape=wo_full.shape, offset=(0, q_heads.start))

    with lab.compute("attention (local heads)"):
        partial, k_cache = attention(CopyToTensorParallel.apply(x, tp), wq, wk, wv, wo, d)
    lab.show("K cache", k_cache.detach(), inside="K cache", full_shape=(p.seq_len, p.kv_heads * d),
             offset=(0, kv_heads.start))                                   # replicas overlap: stored twice
    y = ReduceFromTensorParallel.apply(partial, tp)                        # g: sum over the ranks' heads
    with lab.compute("backward"):
        y.square().sum().backward()

    if replicas > 1:                                                       # GQA: sum each KV head's replicas
        for first in range(0, t, replicas):
            group = lab.group(f"kv{first // replicas}", list(range(first, first + replicas)))
            if first <= r < first + replicas:
                comm.all_reduce(wk.grad, group=group, label="sum the replicated K head's gradient")
                comm.all_reduce(wv.grad, group=group, label="sum the replicated V head's gradient")
    report_kv_cache_copies(lab, p, kv_heads.start // d, replicas)

    lab.check("output Y", y, ref_out, "this rank's Y against the single-process attention")
    lab.check("input gradient dX", x.grad, ref[0].grad, "dL/dX after f's all-reduce against the reference")
    for name, w, full_grad, cols in (("Wq", wq, ref[1].grad, q_heads), ("Wk", wk, ref[2].grad, kv_heads),
                                     ("Wv", wv, ref[3].grad, kv_heads)):
        lab.check(f"{name} shard gradient", w.grad, full_grad[cols], f"dL/d{name} for this rank's heads")
    lab.check("Wo shard gradient", wo.grad, ref[4].grad[:, q_heads], "dL/dWo for this rank's heads' columns")


def report_kv_cache_copies(lab, p, first_kv_head, replicas):
    """How many ranks store the same K cache, counted from what each rank holds, beside t / n_kv."""
    with lab.untraced():                                                   # a count for the page, not the lesson's traffic
        held = comm.all_gather(torch.tensor([first_kv_head], device=lab.device))   # [t]: each rank's first KV head
    copies = max(held.tolist().count(head) for head in held.tolist())
    if lab.rank == 0:
        t = lab.world_size
        worked = f"{t} / {p.kv_heads} = {replicas}" if p.kv_heads < t else "n_kv ≥ t, so 1"
        lab.metric("kv_cache_copies", copies, "copies", expected=replicas,
                   formula=f"t / n_kv when n_kv < t, else 1 (t = {t}, n_kv = {p.kv_heads}: {worked})")
