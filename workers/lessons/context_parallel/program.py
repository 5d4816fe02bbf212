"""Context parallelism: attention over a sequence no single rank holds whole.

Ring attention (Liu, Zaharia & Abbeel, 2023): each rank keeps its queries and passes its K/V block
around the ring r → r+1. At step s it attends to the block that started on rank r−s and merges the
partial result with an online softmax (as FlashAttention does, Dao et al., 2022):

    lse = logaddexp(lse, lse_b)                       lse: log Σ exp(scores) of the keys seen so far
    out = out · exp(lse_old − lse) + out_b · exp(lse_b − lse)

Causal attention leaves a contiguous split unbalanced: rank 0's queries see only its own block, the
last rank's see every block. The zig-zag split gives rank r the chunks r and 2p−1−r of 2p chunks, so
every rank does the same work:

    p = 4, causal          step 0  1  2  3              zig-zag: every rank ■ ◧ ◧ ◧
    contiguous   rank 0        ■  ·  ·  ·    · an idle step: the block is all masked,
                 rank 3        ■  ■  ■  ■      but it is passed on all the same

Backward: each rank's autograd gives dQ for its own tokens, and a share of dK/dV for every block it
saw; the shares travel around the ring once more, each rank adding its own, back to the block's owner.

Ulysses (Jacobs et al., 2023, DeepSpeed-Ulysses): an all-to-all turns "my tokens, every head" into
"every token, my heads/p heads"; attention runs locally on whole sequences; a second all-to-all turns
the output back. Four all-to-alls forward (Q, K, V in; the output out), four backward.
"""

import math

import torch
import torch.distributed as dist

from workers import comm


# ---- the sequence split ------------------------------------------------------------------------------
def positions(rank, p, seq_len, zigzag):
    """The global token indices rank `rank` holds: one contiguous block, or chunks r and 2p−1−r."""
    if not zigzag:
        block = seq_len // p
        return torch.arange(rank * block, (rank + 1) * block)
    chunk = seq_len // (2 * p)
    return torch.cat([torch.arange(rank * chunk, (rank + 1) * chunk),
                      torch.arange((2 * p - 1 - rank) * chunk, (2 * p - rank) * chunk)])


MASKED = -1e9     # a masked score: finite, so that a row with nothing to see has weight 0, not NaN


def make_inputs(p, device):
    torch.manual_seed(p.seed)
    return [torch.randn(p.seq_len, p.heads, p.head_dim, device=device) for _ in "qkv"]   # [S, h, d] each


def attention(q, k, v, q_pos, k_pos, causal):
    """Softmax attention of queries q [Sq, h, d] over keys/values k, v [Sk, h, d] at these global
    positions: (out [Sq, h, d], lse [h, Sq]). A query that may see none of these keys gets lse ≈ −10⁹:
    merged with anything it sees elsewhere, its weight is 0."""
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(q.shape[-1])   # [h, Sq, Sk]
    if causal:
        scores = scores.masked_fill(q_pos[:, None] < k_pos[None, :], MASKED)
    lse = torch.logsumexp(scores, dim=-1)                              # [h, Sq]
    return torch.einsum("hqk,khd->qhd", torch.softmax(scores, dim=-1), v), lse


def merge(out, lse, out_b, lse_b):
    """Online softmax: two partial results over disjoint keys → the result over both."""
    new = torch.logaddexp(lse, lse_b)
    weight = lambda s: torch.exp(s - new).transpose(0, 1)[..., None]   # noqa: E731  [Sq, h, 1]
    return out * weight(lse) + out_b * weight(lse_b), new


# ---- ring attention ----------------------------------------------------------------------------------------
def ring_attention(lab, q, kv, q_pos, p):
    """This rank's output after every K/V block has passed; returns (out, the blocks it saw by owner)."""
    world, rank = lab.world_size, lab.rank
    right, left = (rank + 1) % world, (rank - 1) % world
    out, lse = torch.zeros_like(q), torch.full(q.shape[1::-1], 2 * MASKED, device=q.device)   # nothing seen yet
    seen, work, merged, sent_bytes = {}, torch.zeros(p.seq_len // world, p.seq_len, device=q.device), 0, 0
    for step in range(world):
        owner = (rank - step) % world                                  # whose K/V block this is
        seen[owner] = kv
        k_pos = positions(owner, world, p.seq_len, p.load_balance and p.causal)
        visible = (q_pos[:, None] >= k_pos[None, :]) if p.causal else torch.ones(len(q_pos), len(k_pos), dtype=torch.bool)
        if visible.any():
            with lab.compute(f"attend to rank {owner}'s block"):
                out_b, lse_b = attention(q, kv[0], kv[1], q_pos, k_pos, p.causal)
                if p.mistake == "average_blocks":                     # the bug: ignores each block's softmax mass
                    out, lse = (out * merged + out_b) / (merged + 1), torch.logaddexp(lse, lse_b)
                else:
                    out, lse = merge(out, lse, out_b, lse_b)
            merged += 1
            work[:, k_pos] = torch.where(visible, step + 1.0, 0.0)
        if step < world - 1:                                           # pass the block on, take the next
            incoming = torch.empty_like(kv.detach())
            sent = comm.isend(kv.detach(), dst=right, label=f"ring step {step + 1}: pass rank {owner}'s K/V on")
            comm.recv(incoming, src=left, label=f"ring step {step + 1}: rank {(owner - 1) % world}'s K/V arrives")
            sent.wait()
            sent_bytes += kv.numel() * kv.element_size()
            kv = incoming.requires_grad_()
    return out, seen, work, sent_bytes


def return_kv_gradients(lab, seen):
    """Each block's dK/dV shares travel the ring once, every rank adding its own, back to the owner."""
    world, rank = lab.world_size, lab.rank
    right, left = (rank + 1) % world, (rank - 1) % world
    share = lambda owner: seen[owner].grad if seen[owner].grad is not None else torch.zeros_like(seen[owner])  # noqa: E731
    total, sent_bytes = share(rank).clone(), 0                          # starts at the owner: its own share
    for step in range(1, world + 1 if world > 1 else 1):
        incoming = torch.empty_like(total)
        sent = comm.isend(total, dst=right, label=f"backward ring step {step}: pass the dK/dV sum on")
        comm.recv(incoming, src=left, label=f"backward ring step {step}: a dK/dV sum arrives")
        sent.wait()
        sent_bytes += total.numel() * total.element_size()
        owner = (rank - step) % world
        total = incoming + share(owner) if step < world else incoming  # after p steps it is home, complete
    return total, sent_bytes


# ---- Ulysses -------------------------------------------------------------------------------------------------
class Traffic:
    """Bytes this rank handed to other ranks in all-to-alls (its own part stays home)."""
    sent = 0


def _all_to_all(x, scatter_dim, gather_dim, group):
    """Split x along `scatter_dim` into p parts, send part j to rank j, concatenate what arrives
    along `gather_dim`."""
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    parts = [c.contiguous() for c in x.chunk(world, dim=scatter_dim)]
    received = [torch.empty_like(c) for c in parts]
    dist.all_to_all(received, parts, group=group)
    Traffic.sent += sum(c.numel() * c.element_size() for j, c in enumerate(parts) if j != rank)
    return torch.cat(received, dim=gather_dim)


class SequenceToHeads(torch.autograd.Function):
    """Forward: [S/p, h, d] (my tokens, every head) → [S, h/p, d] (every token, my heads).
    Backward: the inverse all-to-all."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _all_to_all(x, scatter_dim=1, gather_dim=0, group=group)

    @staticmethod
    def backward(ctx, grad):
        return _all_to_all(grad, scatter_dim=0, gather_dim=1, group=ctx.group), None


class HeadsToSequence(torch.autograd.Function):
    """Forward: [S, h/p, d] → [S/p, h, d]. Backward: the inverse all-to-all."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _all_to_all(x, scatter_dim=0, gather_dim=1, group=group)

    @staticmethod
    def backward(ctx, grad):
        return _all_to_all(grad, scatter_dim=1, gather_dim=0, group=ctx.group), None


# ---- the rank program -------------------------------------------------------------------------------------
def run(lab, p):
    world, rank = lab.world_size, lab.rank
    cp = lab.group("cp")
    zigzag = p.method == "ring" and p.load_balance and p.causal
    mine = positions(rank, world, p.seq_len, zigzag)                  # this rank's tokens
    q_full, k_full, v_full = make_inputs(p, lab.device)
    ref = [t.clone().requires_grad_() for t in (q_full, k_full, v_full)]
    everyone = torch.arange(p.seq_len)
    ref_out, _ = attention(*ref, everyone, everyone, p.causal)
    ref_out.square().sum().backward()

    q = q_full[mine].clone().requires_grad_()                         # [S/p, h, d]
    kv = torch.stack([k_full[mine], v_full[mine]]).requires_grad_()   # [2, S/p, h, d]: K and V travel together
    if p.method == "ring":
        out, seen, work, sent_bytes = ring_attention(lab, q, kv, mine, p)
        for part, rows in _runs(mine):                                 # which pairs, at which step (0: masked)
            lab.show("attention pairs computed (step + 1)", work[part], inside="attention pairs",
                     full_shape=(p.seq_len, p.seq_len), offset=(rows, 0))
        with lab.compute("backward"):
            out.square().sum().backward()
        dkv, dkv_bytes = return_kv_gradients(lab, seen)
        _ring_metrics(lab, p, kv, work, sent_bytes, dkv_bytes)
    else:
        out = HeadsToSequence.apply(_ulysses_attention(lab, q, kv, cp, p), cp)
        with lab.compute("backward"):
            out.square().sum().backward()
        dkv = kv.grad
        _ulysses_metrics(lab, p, kv)

    lab.check("output", out, ref_out[mine], "this rank's tokens of the attention output against one process")
    lab.check("dQ", q.grad, ref[0].grad[mine], "dL/dQ for this rank's tokens")
    lab.check("dK", dkv[0], ref[1].grad[mine], "dL/dK for this rank's tokens, every rank's share summed")
    lab.check("dV", dkv[1], ref[2].grad[mine], "dL/dV for this rank's tokens, every rank's share summed")


def _ulysses_attention(lab, q, kv, cp, p):
    """All-to-all to head shards, attention over the whole sequence, locally."""
    q_h = SequenceToHeads.apply(q, cp)                                 # [S, h/p, d]
    k_h = SequenceToHeads.apply(kv[0], cp)
    v_h = SequenceToHeads.apply(kv[1], cp)
    everyone = torch.arange(p.seq_len)
    with lab.compute("attention (my heads, every token)"):
        out_h, _ = attention(q_h, k_h, v_h, everyone, everyone, p.causal)
    return out_h


def _runs(tokens):
    """(slice of `tokens`, its first position) for each contiguous run of positions."""
    starts = [0] + [i for i in range(1, len(tokens)) if tokens[i] != tokens[i - 1] + 1] + [len(tokens)]
    return [(slice(a, b), int(tokens[a])) for a, b in zip(starts, starts[1:])]


def _ring_metrics(lab, p, kv, work, sent_bytes, dkv_bytes):
    world = lab.world_size
    kv_total = world * kv.numel() * kv.element_size()                  # K and V of the whole sequence, bytes
    lab.metric("kv_bytes_sent", sent_bytes, "bytes", expected=(world - 1) / world * kv_total,
               formula="(p−1)/p · (K+V): forward, each rank passes on every block but the last it receives")
    lab.metric("dkv_bytes_sent", dkv_bytes, "bytes", expected=kv_total if world > 1 else 0,
               formula="p/p · (K+V): backward, each dK/dV sum goes once around the ring, home again")
    pairs = int((work > 0).sum()) * p.heads
    total = (p.seq_len * (p.seq_len + 1) // 2 if p.causal else p.seq_len ** 2) * p.heads
    lab.metric("attention_pairs", pairs, "pairs", expected=total / world,
               formula="S(S+1)/2 · h / p when balanced (causal); S² · h / p otherwise")
    lab.metric("idle_steps", int(sum(1 for s in range(world) if not (work == s + 1).any())), "steps",
               formula="ring steps whose block was all masked (causal, contiguous split)")


def _ulysses_metrics(lab, p, kv):
    world = lab.world_size
    tensor = kv[0].numel() * kv.element_size()                         # one of Q, K, V, O on this rank
    lab.metric("all_to_all_bytes_sent", Traffic.sent, "bytes", expected=8 * (world - 1) / world * tensor,
               formula="8 all-to-alls (Q, K, V in and O out, forward and backward), each sending (p−1)/p of S/p·h·d")
