"""The single-process mixture-of-experts layer the ranks are checked against, and the routing both use.

One process holds every rank's tokens (rank r's are rows r·T … (r+1)·T of X) and every expert, and
adds each token's k expert outputs, weighted by the router, straight into its row — no permutation,
no communication. The routing (router, top-k, capacity) is the same function on the ranks, so both
pick the same experts and drop the same tokens; everything numeric is computed apart.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

SKEW = 2.0   # the skewed router's bias: +SKEW on the first expert's logit down to −SKEW on the last


@dataclass
class MoeInputs:
    x: torch.Tensor        # [W·T, H]  every rank's tokens
    router: torch.Tensor   # [E, H]    the router, the same on every rank
    w1: torch.Tensor       # [E, FFN, H]  each expert's first layer
    w2: torch.Tensor       # [E, H, FFN]  and its second


@dataclass
class Routing:
    gates: torch.Tensor    # [T, k]  the router's probability for each chosen expert
    experts: torch.Tensor  # [T, k]  which experts each token goes to
    kept: torch.Tensor     # [T, k]  False where the expert was full: the token is dropped there


@dataclass
class Reference:
    out: torch.Tensor      # [W·T, H]
    grads: MoeInputs       # dL/dX, dL/dRouter, dL/dW1, dL/dW2 for loss = sum(Y²)
    routings: list         # each rank's Routing


def make_inputs(world: int, p, device) -> MoeInputs:
    g = torch.Generator().manual_seed(p.seed)
    n_experts = p.experts * world
    x = torch.randn(world * p.tokens, p.hidden, generator=g)
    router = torch.randn(n_experts, p.hidden, generator=g) / math.sqrt(p.hidden)
    w1 = torch.randn(n_experts, p.ffn, p.hidden, generator=g) / math.sqrt(p.hidden)
    w2 = torch.randn(n_experts, p.hidden, p.ffn, generator=g) / math.sqrt(p.ffn)
    return MoeInputs(*(t.to(device) for t in (x, router, w1, w2)))


def capacity(p, world: int) -> int:
    """C = ⌈cf · T·k / E⌉: how many of one rank's tokens an expert takes (GShard, Switch)."""
    return math.ceil(p.capacity_factor * p.tokens * p.top_k / (p.experts * world))


def router_bias(n_experts: int, skewed: bool, device) -> torch.Tensor:
    """Zero, or a bias that favours the first experts: a router whose training went lopsided."""
    if not skewed or n_experts == 1:
        return torch.zeros(n_experts, device=device)
    return torch.linspace(SKEW, -SKEW, n_experts, device=device)


def route(x, router, bias, top_k: int, capacity: int) -> Routing:
    """Top-k routing with a capacity: an expert takes at most `capacity` of these tokens, every
    token's first choice before any second choice, then in token order (GShard's priority)."""
    probs = F.softmax(F.linear(x, router) + bias, dim=-1)           # [T, E]
    gates, experts = probs.topk(top_k, dim=-1)                      # [T, k]
    choice_major = F.one_hot(experts.t().reshape(-1), router.shape[0])   # [k·T, E]
    place = (choice_major.cumsum(0) * choice_major).sum(-1) - 1     # each choice's place in its expert's queue
    kept = (place < capacity).reshape(top_k, -1).t()                # [T, k]
    return Routing(gates, experts, kept)


def expert_ffn(x, w1, w2):
    """One expert: a small MLP, GELU(X·W1ᵀ)·W2ᵀ."""
    return F.linear(F.gelu(F.linear(x, w1)), w2)


def reference(full: MoeInputs, p, world: int) -> Reference:
    x, router, w1, w2 = (t.clone().requires_grad_() for t in (full.x, full.router, full.w1, full.w2))
    bias = router_bias(router.shape[0], p.skewed_router, x.device)
    out, routings = torch.zeros_like(x), []
    for r in range(world):                                          # each rank's tokens are one group
        first = r * p.tokens
        routing = route(x[first:first + p.tokens], router, bias, p.top_k, capacity(p, world))
        routings.append(routing)
        for e in range(router.shape[0]):
            token, choice = ((routing.experts == e) & routing.kept).nonzero(as_tuple=True)
            y = expert_ffn(x[first + token], w1[e], w2[e]) * routing.gates[token, choice, None]
            out = out.index_add(0, first + token, y)
    out.square().sum().backward()
    return Reference(out.detach(), MoeInputs(x.grad, router.grad, w1.grad, w2.grad), routings)


def dispatched_to(full: MoeInputs, routings: list, experts: range, tokens: int) -> torch.Tensor:
    """The tokens a rank holding `experts` receives, in the order the dispatch delivers them: rank
    by rank, within a rank expert by expert, within an expert in token order."""
    rows = [r * tokens + ((rt.experts == e) & rt.kept).nonzero(as_tuple=True)[0]
            for r, rt in enumerate(routings) for e in experts]
    return full.x[torch.cat(rows)]
