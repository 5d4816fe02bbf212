"""The LayerNorm + MLP block that the tensor- and sequence-parallel lessons split, and its
single-process reference.

    Y = GELU(LayerNorm(X) · W1ᵀ) · W2ᵀ        X: [S, H]   W1: [FFN, H]   W2: [H, FFN]

Every rank draws the same full inputs, in the seed chapter's order (x, LayerNorm weight, W1/√H,
W2/√FFN), so the numbers match the chapter's check, then computes the reference on its own.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class BlockInputs:
    x: torch.Tensor      # [S, H]
    ln_w: torch.Tensor   # [H]
    w1: torch.Tensor     # [FFN, H]
    w2: torch.Tensor     # [H, FFN]


@dataclass
class Reference:
    out: torch.Tensor    # [S, H]
    grads: BlockInputs   # the gradient of loss = sum(Y²) with respect to each input


def make_inputs(seq_len: int, hidden: int, ffn: int, seed: int, device="cpu") -> BlockInputs:
    torch.manual_seed(seed)
    x = torch.randn(seq_len, hidden)
    ln_w = torch.randn(hidden)
    w1 = torch.randn(ffn, hidden) / hidden ** 0.5
    w2 = torch.randn(hidden, ffn) / ffn ** 0.5
    return BlockInputs(*(t.to(device) for t in (x, ln_w, w1, w2)))


def block(x, ln_w, w1, w2):
    h = F.layer_norm(x, (x.shape[-1],), weight=ln_w)
    return F.linear(F.gelu(F.linear(h, w1)), w2)


def reference(inputs: BlockInputs) -> Reference:
    """One process, the whole block: the numbers every rank's shard is checked against."""
    leaves = [t.clone().requires_grad_() for t in (inputs.x, inputs.ln_w, inputs.w1, inputs.w2)]
    out = block(*leaves)
    out.square().sum().backward()
    return Reference(out.detach(), BlockInputs(*(t.grad for t in leaves)))


# ---- activation memory, against Korthikanti et al., 2022, section 4.1 ------------------------------
#
# The paper counts what one transformer layer saves for backward (16-bit activations, FFN = 4h, b
# sequences): its MLP half with the LayerNorm before it is
#     LayerNorm input sbh · W1's input sbh · GELU's input 4sbh · W2's input 4sbh · dropout mask sbh/2
# (in elements; the paper writes bytes: 2sbh + 2sbh + 8sbh + 8sbh + sbh). Tensor parallelism splits
# the two FFN-wide terms t-fold; sequence parallelism splits the rest as well, and keeps only the
# sequence shard of W1's input (all-gathered again in backward). This block runs float32 (4 B), any
# FFN width f, no dropout, b = 1; and its W1 keeps the whole gathered X, not the shard.

ELEMENT_BYTES = 4


@dataclass(frozen=True)
class ActivationTerm:
    key: str             # saved_<key>_bytes, the metric's name
    label: str
    block: int           # elements this block saves per rank
    paper: int | None    # elements the paper's term gives for this block's sizes (None: not in the paper)
    formula: str


def activation_terms(s: int, h: int, f: int, t: int, sequence_parallel: bool) -> list[ActivationTerm]:
    """What each rank should save for backward, term by term (b = 1)."""
    shard = t if sequence_parallel else 1
    sp = "/t" if sequence_parallel else ""
    return [
        ActivationTerm("ln_input", "LayerNorm's input", s * h // shard, s * h // shard, f"sbh{sp}"),
        ActivationTerm("ln_stats", "LayerNorm's mean and 1/σ", 2 * s // shard, None,
                       f"2sb{sp} (the paper leaves them out)"),
        ActivationTerm("w1_input", "W1's input", s * h, s * h // shard,
                       f"sbh (the paper: sbh{sp}{', it keeps the shard and all-gathers again in backward' if sp else ''})"),
        ActivationTerm("gelu_input", "GELU's input", s * f // t, s * f // t, "sbf/t (the paper: 4sbh/t, f = 4h)"),
        ActivationTerm("w2_input", "W2's input", s * f // t, s * f // t, "sbf/t (the paper: 4sbh/t, f = 4h)"),
    ]


class SavedActivations:
    """The tensors autograd saves for backward inside `with saved:` (saved-tensor hooks), each once,
    the layer weights excluded (parameters, not activations)."""

    def __init__(self, weights):
        self.weights = {w.untyped_storage().data_ptr() for w in weights}
        self.saved = {}                                   # (data_ptr, numel) → tensor

    def _pack(self, tensor):
        if tensor.untyped_storage().data_ptr() not in self.weights:
            self.saved[(tensor.data_ptr(), tensor.numel())] = tensor
        return tensor

    def __enter__(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)

    def by_term(self, ln_input, w1_input, w2_input) -> dict[str, int]:
        """Bytes per term: the three named tensors by identity; GELU's input is the other FFN-wide
        tensor; what is left is LayerNorm's statistics."""
        named = {ln_input.data_ptr(): "ln_input", w1_input.data_ptr(): "w1_input", w2_input.data_ptr(): "w2_input"}
        out = dict.fromkeys(("ln_input", "ln_stats", "w1_input", "gelu_input", "w2_input"), 0)
        for (ptr, _), tensor in self.saved.items():
            key = named.get(ptr) or ("gelu_input" if tensor.shape == w2_input.shape else "ln_stats")
            out[key] += tensor.numel() * tensor.element_size()
        return out


def report_activations(lab, saved, terms, ln_input, w1_input, w2_input, sizes):
    """Each term's measured bytes beside this block's formula (`expected`) and the paper's (`paper`)."""
    measured = saved.by_term(ln_input, w1_input, w2_input)
    for term in terms:
        paper = {} if term.paper is None else {"paper": term.paper * ELEMENT_BYTES}
        lab.metric(f"saved_{term.key}_bytes", measured[term.key], "bytes", expected=term.block * ELEMENT_BYTES,
                   **paper, formula=f"{term.label}: {term.formula} × 4 B  ({sizes})")
    lab.metric("saved_activation_bytes", sum(measured.values()), "bytes",
               expected=sum(term.block for term in terms) * ELEMENT_BYTES,
               paper=sum(term.paper or 0 for term in terms) * ELEMENT_BYTES,
               formula=f"the terms above; the paper's sum has no LayerNorm statistics and, here, no dropout mask  ({sizes})")
