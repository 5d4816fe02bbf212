import math

import torch
import torch.distributed as dist

MASKED = -1e9     # a masked score: finite, so a query that sees none of a block's keys gets weight 0, not NaN


def block_attention(q, k, v, q_pos, k_pos):
    """Causal attention of queries q [Sq, h, d] over one block k, v [Sk, h, d] at these global
    positions: (out [Sq, h, d], lse [h, Sq]) — lse = log Σ exp(score) over this block's keys."""
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(q.shape[-1])        # [h, Sq, Sk]
    scores = scores.masked_fill(q_pos[:, None] < k_pos[None, :], MASKED)
    return torch.einsum("hqk,khd->qhd", torch.softmax(scores, dim=-1), v), torch.logsumexp(scores, dim=-1)


def merge(out, lse, out_b, lse_b):
    """Online softmax: partial results over two disjoint sets of keys → the result over both."""
    new = torch.logaddexp(lse, lse_b)
    weight = lambda s: torch.exp(s - new).transpose(0, 1)[..., None]   # noqa: E731  [Sq, h, 1]
    return out * weight(lse) + out_b * weight(lse_b), new


def ring_attention(q, k, v, rank, world):
    """Pass the stacked K/V block around the ring rank → rank + 1; attend to each block as it comes."""
    n = q.shape[0]                                                    # tokens per rank
    positions = lambda owner: torch.arange(owner * n, (owner + 1) * n)   # noqa: E731
    out, lse = torch.zeros_like(q), torch.full(q.shape[1::-1], 2 * MASKED)   # nothing seen yet
    kv = torch.stack([k, v])                                          # [2, n, h, d]: one message a step
    ...
    return out
