"""Expert parallelism: a top-k mixture-of-experts layer, after GShard (Lepikhin et al., 2020) and
the Switch Transformer (Fedus et al., 2021).

Each rank holds T tokens and `experts` of the E experts (rank r: experts r·E/W … ). The router,
the same on every rank, picks k experts per token; a token travels to the ranks holding its
experts and its results travel back — two all-to-alls whose split sizes differ rank by rank:

    rank 0: tokens ─ router ─ top-k ─┐                ┌─ experts 0,1 ─┐                ┌─ Σ gate·out ─ Y₀
    rank 1: tokens ─ router ─ top-k ─┼─ dispatch ─────┼─ experts 2,3 ─┼─ combine ──────┼─ Σ gate·out ─ Y₁
    rank 2: tokens ─ router ─ top-k ─┘  all-to-all    └─ experts 4,5 ─┘  all-to-all    └─ Σ gate·out ─ Y₂
            sort by expert: the rows for rank j        returned in the order they were sent: undo the sort
            go together, send_splits[j] of them

An expert takes at most C = ⌈cf·T·k/E⌉ of one rank's tokens (its capacity); the rest are dropped.
"""

import torch

from workers import comm
from workers.lessons.expert_parallel.reference import (
    capacity, dispatched_to, expert_ffn, make_inputs, reference, route, router_bias)


class AllToAll(torch.autograd.Function):
    """Forward: send send_splits[j] rows to rank j, receive recv_splits[j] rows from rank j.
    Backward: the same exchange reversed — each row's gradient goes back to where the row came from."""

    @staticmethod
    def forward(ctx, rows, send_splits, recv_splits, group, label, back_label):
        ctx.args = send_splits, recv_splits, group, back_label
        return comm.all_to_all_single(rows, send_splits, recv_splits, group=group, label=label)

    @staticmethod
    def backward(ctx, grad):
        send_splits, recv_splits, group, back_label = ctx.args
        grad = comm.all_to_all_single(grad, recv_splits, send_splits, group=group, label=back_label)
        return grad, None, None, None, None, None


def splits(counts: list[int], what: str) -> str:
    """A label naming the split sizes, e.g. `3·0·5·2 tokens to ranks 0–3`, for the page and the tests."""
    return f"{'·'.join(map(str, counts))} {what} ranks 0–{len(counts) - 1}"


def run(lab, p):
    ep = lab.group("ep")                                   # all ranks form one expert-parallel group
    W, r = lab.world_size, lab.rank
    E, k, T = p.experts * W, p.top_k, p.tokens
    mine = slice(r * p.experts, (r + 1) * p.experts)       # this rank's experts
    full = make_inputs(W, p, lab.device)                   # same numbers on every rank
    ref = reference(full, p, W)
    C = capacity(p, W)

    x = full.x[r * T:(r + 1) * T].clone().requires_grad_()   # [T, H]  this rank's tokens
    router = full.router.clone().requires_grad_()            # [E, H]  replicated
    w1 = full.w1[mine].clone().requires_grad_()              # [experts, FFN, H]  this rank's experts only
    w2 = full.w2[mine].clone().requires_grad_()              # [experts, H, FFN]

    with lab.compute("router"):
        routing = route(x, router, router_bias(E, p.skewed_router, x.device), k, C)   # [T, k] each
    lab.show("chosen experts", routing.experts)
    lab.show("kept (within capacity)", routing.kept)

    # count: every rank learns how many tokens each rank routes to each expert, then caps them at C
    wanted = torch.bincount(routing.experts.flatten(), minlength=E)[None]            # [1, E]
    load = comm.all_gather(wanted, group=ep, label="count: tokens each rank routes to each expert")   # [W, E]
    sent = load.clamp(max=C)                               # [W, E]  what capacity lets through
    send_splits = sent[r].view(W, p.experts).sum(1).tolist()   # rows to each rank
    recv_splits = sent[:, mine].sum(1).tolist()                # rows from each rank
    lab.show("tokens per expert", load.sum(0)[mine], inside="tokens per expert",
             full_shape=(E,), offset=(mine.start,))
    lab.show("dispatch splits", torch.tensor([send_splits]), inside="dispatch splits (row: from, column: to)",
             full_shape=(W, W), offset=(r, 0))

    # dispatch: the kept (token, choice) pairs sorted by expert, so each rank's rows are contiguous
    kept = routing.kept.flatten().nonzero().squeeze(1)     # [Σ send]  kept pairs, as t·k + choice
    by_expert = kept[routing.experts.flatten()[kept].argsort(stable=True)]
    outgoing = x[by_expert // k]                           # [Σ send, H]  each kept pair's token
    tokens = AllToAll.apply(outgoing, send_splits, recv_splits, ep,            # [Σ recv, H]
                            "dispatch: " + splits(send_splits, "tokens to"),
                            "dispatch backward: " + splits(recv_splits, "token gradients back to"))

    # experts: the rows arrive rank by rank, within a rank expert by expert
    expert_of_row = torch.arange(p.experts, device=x.device).repeat(W).repeat_interleave(sent[:, mine].flatten())
    out = torch.zeros_like(tokens)
    with lab.compute("expert"):
        for e in range(p.experts):
            rows = (expert_of_row == e).nonzero().squeeze(1)
            out = out.index_copy(0, rows, expert_ffn(tokens[rows], w1[e], w2[e]))   # [rows, H]

    # combine: the results go back where their tokens came from, in the order they were sent
    back = AllToAll.apply(out, recv_splits, send_splits, ep,                       # [Σ send, H]
                          "combine: " + splits(recv_splits, "results back to"),
                          "combine backward: " + splits(send_splits, "result gradients to"))
    answers = by_expert                                    # the (token, choice) each returned row answers
    if p.mistake == "combine_wrong_order":
        answers = kept                                     # the bug: the rows taken back in the order before the sort
    gates = routing.gates.flatten()[answers, None]         # [Σ send, 1]
    y = torch.zeros_like(x).index_add(0, answers // k, gates * back)                # [T, H]  Σ gate·expert(x)
    lab.show("Y", y)

    with lab.compute("backward"):
        y.square().sum().backward()                        # loss = sum(Y²), as in the reference
    comm.all_reduce(router.grad, group=ep, label="router gradient: sum every rank's share")

    report(lab, p, C, load, outgoing, out, ref)

    lab.check("tokens at the experts", tokens, dispatched_to(full, ref.routings, range(E)[mine], T),
              "the tokens this rank's experts received against the tokens the reference routes to them")
    lab.check("output Y", y, ref.out[r * T:(r + 1) * T], "this rank's Y against the single-process Y")
    lab.check("input gradient dX", x.grad, ref.grads.x[r * T:(r + 1) * T],
              "dL/dX for this rank's tokens against the reference's")
    lab.check("router gradient", router.grad, ref.grads.router,
              "dL/dRouter summed over the ranks against the reference's")
    lab.check("expert W1 gradient", w1.grad, ref.grads.w1[mine],
              "dL/dW1 of this rank's experts against the same experts' reference gradient")
    lab.check("expert W2 gradient", w2.grad, ref.grads.w2[mine],
              "dL/dW2 of this rank's experts against the same experts' reference gradient")


def report(lab, p, C, load, outgoing, returned, ref):
    """The load, the dropped tokens and the bytes as measured here, each beside its formula worked
    out from the single-process routing (n_r,e: tokens rank r routes to expert e)."""
    W, r = lab.world_size, lab.rank
    E, T, k, H = p.experts * W, p.tokens, p.top_k, p.hidden
    mine = slice(r * p.experts, (r + 1) * p.experts)
    n = torch.stack([torch.bincount(rt.experts.flatten(), minlength=E) for rt in ref.routings])   # [W, E]
    dropped = (n - C).clamp(min=0)                         # [W, E]
    received = n.clamp(max=C)[:, mine].sum()               # what this rank's experts should get
    symbols = f"(cf={p.capacity_factor:g}, T={T}, k={k}, E={E}, C={C})"
    lab.metric("tokens_received", returned.shape[0], "tokens", expected=int(received),
               formula=f"Σ_src Σ_e∈r min(n_src,e, C)  {symbols}")
    lab.metric("tokens_dropped", T * k - outgoing.shape[0], "tokens", expected=int(dropped[r].sum()),
               formula=f"Σ_e max(0, n_r,e − C)  {symbols}")
    lab.metric("dispatch_bytes", outgoing.numel() * outgoing.element_size(), "bytes",
               expected=int(T * k - dropped[r].sum()) * H * outgoing.element_size(),
               formula=f"(T·k − dropped_r)·H·4 B  (T={T}, k={k}, H={H})")
    lab.metric("combine_bytes", returned.numel() * returned.element_size(), "bytes",
               expected=int(received) * H * returned.element_size(), formula=f"received_r·H·4 B  (H={H})")
    if r == 0:
        per_rank = load.clamp(max=C).sum(0).view(W, p.experts).sum(1)   # [W]  tokens each rank computes
        lab.metric("capacity", C, "tokens", formula=f"C = ⌈cf·T·k / E⌉  {symbols}")
        lab.metric("tokens_dropped_total", int((load - C).clamp(min=0).sum()), "tokens",
                   expected=int(dropped.sum()), formula=f"Σ_r Σ_e max(0, n_r,e − C)  {symbols}")
        lab.metric("expert_load_max_over_mean", round(float(load.sum(0).max()) * E / (W * T * k), 4), "×",
                   formula=f"max_e Σ_r n_r,e / (W·T·k / E), before capacity  (W={W}, T={T}, k={k}, E={E})")
        lab.metric("rank_load_max_over_mean", round(float(per_rank.max() * W / max(1, per_rank.sum())), 4), "×",
                   formula="max_r received_r / mean_r received_r, after capacity")
