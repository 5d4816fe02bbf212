"""DTensor: one tensor, placed on a device mesh (torch.distributed.tensor).

A DTensor is a global tensor plus, for each dimension of the mesh, a placement saying what each
rank's local tensor is:
    Shard(d)     a 1/n slice along tensor dimension d          local [rows/n, cols] for Shard(0)
    Replicate()  the whole tensor                              local [rows, cols]
    Partial()    a term of a sum: the tensor is Σ over ranks   local [rows, cols], not yet added up
`redistribute` moves a DTensor from one placement to another, and each move is one collective:

    Shard(d) → Replicate()   all-gather          Partial() → Replicate()  all-reduce
    Shard(i) → Shard(j)      all-to-all          Partial() → Shard(d)     reduce-scatter
    Replicate() → Shard(d)   nothing: each rank keeps its slice

(gloo has no all-to-all for DTensor: on CPU torch makes Shard(i) → Shard(j) an all-gather and a
chunk, and says so in a warning.) On a 2-D mesh each dimension has its own placement, and a move
along one dimension is a collective within that dimension's groups only.

Then `parallelize_module` does Megatron with placements: ColwiseParallel on W1 (Shard(0) of the
weight), RowwiseParallel on W2 (Shard(1)), SequenceParallel on the LayerNorm: the same block, seed
and numbers as the tp_mlp and sp_mlp lessons, and the same collectives.
"""

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.debug import CommDebugMode
from torch.distributed.tensor.parallel import (
    ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module)

from workers.lessons.mlp_block import make_inputs, reference

OPS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all")   # what CommDebugMode counts, by op


def counts(mode: CommDebugMode) -> torch.Tensor:
    """The collectives torch made under `mode`, as counts in OPS order."""
    made = {str(op).split(".")[-1]: n for op, n in mode.get_comm_counts().items()}
    return torch.tensor([sum(n for name, n in made.items() if name.startswith(op)) for op in OPS])


def one_collective(op: str | None) -> torch.Tensor:
    return torch.tensor([int(op == name) for name in OPS])


def placement_name(placement) -> str:
    if placement.is_shard():
        return f"Shard({placement.dim})"
    return "Partial()" if placement.is_partial() else "Replicate()"


def name(placements) -> str:
    """`Shard(0)` on a 1-D mesh, `[Replicate(), Shard(1)]` on a 2-D one."""
    names = [placement_name(placement) for placement in placements]
    return names[0] if len(names) == 1 else "[" + ", ".join(names) + "]"


def build_2d_mesh(lab):
    """A 2 × N/2 mesh, dimensions ("dp", "tp"): rank r sits at (r // (N/2), r % (N/2)). Every rank
    creates every group (torch requires it) and keeps the two it belongs to."""
    side = lab.world_size // 2
    grid = torch.arange(lab.world_size).view(2, side)
    mine = {}
    for dim, lines in (("dp", grid.t().tolist()), ("tp", grid.tolist())):
        for index, members in enumerate(lines):
            group = lab.group(f"mesh {dim}" if lab.rank in members else f"mesh {dim}{index}", members)
            if lab.rank in members:
                mine[dim] = group
    return DeviceMesh.from_group([mine["dp"], mine["tp"]], lab.device.type, mesh=grid, mesh_dim_names=("dp", "tp"))


def redistribute(lab, tensor, mesh, placements, full, collective, key):
    """Move `tensor` to `placements`, check this rank's local tensor and the collective torch made,
    and report the local bytes before and after."""
    move = f"{name(tensor.placements)} → {name(placements)}"
    collective = collective if mesh.size() > 1 else None                   # one rank: nothing to move
    with CommDebugMode() as mode, lab.compute(f"redistribute {move}"):
        moved = tensor.redistribute(mesh, placements)
    expected = distribute_tensor(full, mesh, placements).to_local() if not any(
        p.is_partial() for p in placements) else None
    local = moved.to_local()
    lab.show(f"{move}: this rank's local tensor", local)
    if expected is not None:
        lab.check(f"{move}: local tensor", local, expected,
                  f"this rank's local tensor after the move against its {name(placements)} part of the whole tensor")
    lab.check(f"{move}: collective", counts(mode), one_collective(collective),
              f"the collectives torch made (counts of {', '.join(OPS)}) against one {collective or 'none'}")
    element = full.element_size()
    lab.metric(f"{key}_local_bytes", local.numel() * element, "bytes",
               expected=full.numel() * element // mesh_share(mesh, placements),
               formula=f"rows·cols·4 B / (the mesh sizes of the Shard dimensions)  ({move})")
    return moved


def mesh_share(mesh, placements) -> int:
    share = 1
    for size, placement in zip(mesh.shape, placements):
        share *= size if placement.is_shard() else 1
    return share


def placements_1d(lab, p, mesh, full, terms):
    """Every move on the 1-D mesh, each with the collective it makes."""
    to_all = "all_to_all" if dist.get_backend() == "nccl" else "all_gather"   # gloo: all-gather + chunk
    x = distribute_tensor(full, mesh, [Shard(0)])                              # local [rows/n, cols]
    lab.show("X as Shard(0): this rank's rows", x.to_local())
    x = redistribute(lab, x, mesh, [Replicate()], full, "all_gather", "shard0_to_replicate")
    x = redistribute(lab, x, mesh, [Shard(1)], full, None, "replicate_to_shard1")
    x = redistribute(lab, x, mesh, [Shard(0)], full, to_all, "shard1_to_shard0")
    total = terms.sum(0)                                                       # Σ over ranks of each rank's term
    partial = DTensor.from_local(terms[lab.rank], mesh, [Partial()])           # local: this rank's term only
    lab.show("T as Partial(): this rank's term", partial.to_local())
    redistribute(lab, partial, mesh, [Replicate()], total, "all_reduce", "partial_to_replicate")
    redistribute(lab, partial, mesh, [Shard(0)], total, "reduce_scatter", "partial_to_shard0")


def placements_2d(lab, p, full, terms):
    """Moves on a 2 × N/2 mesh: each along one mesh dimension, a collective within its groups."""
    mesh = build_2d_mesh(lab)
    x = distribute_tensor(full, mesh, [Shard(0), Shard(1)])                    # rows by dp, columns by tp
    x = redistribute(lab, x, mesh, [Replicate(), Shard(1)], full, "all_gather", "2d_gather_rows_over_dp")
    redistribute(lab, x, mesh, [Replicate(), Replicate()], full, "all_gather", "2d_gather_cols_over_tp")
    row = mesh["dp"].get_local_rank()                                          # my place along dp
    partial = DTensor.from_local(distribute_tensor(terms[row], mesh["tp"], [Shard(1)]).to_local(),
                                 mesh, [Partial(), Shard(1)])                  # Σ over dp of 2 terms
    redistribute(lab, partial, mesh, [Shard(0), Shard(1)], terms[:2].sum(0), "reduce_scatter", "2d_reduce_scatter_over_dp")


class MlpBlock(nn.Module):
    """mlp_block.block as modules, so that a plan can name them: Y = W2·GELU(W1·LayerNorm(X))."""

    def __init__(self, full):
        super().__init__()
        self.norm = nn.LayerNorm(full.w1.shape[1], bias=False)
        self.w1 = nn.Linear(full.w1.shape[1], full.w1.shape[0], bias=False)
        self.w2 = nn.Linear(full.w2.shape[1], full.w2.shape[0], bias=False)
        with torch.no_grad():
            self.norm.weight.copy_(full.ln_w), self.w1.weight.copy_(full.w1), self.w2.weight.copy_(full.w2)

    def forward(self, x):
        return self.w2(F.gelu(self.w1(self.norm(x))))


def plan_of(p) -> dict:
    """The placements of each module. W1 keeps its output sharded (a DTensor, Shard(-1)) so that W2
    receives it as it is: RowwiseParallel wants exactly that; a colwise W2 gathers it whole first."""
    w2 = ColwiseParallel() if p.mistake == "both_colwise" else None           # the bug: W2 split like W1
    if p.plan == "tensor_parallel":                                            # as tp_mlp: f before W1, g after W2
        return {"w1": ColwiseParallel(use_local_output=False), "w2": w2 or RowwiseParallel()}
    return {"norm": SequenceParallel(sequence_dim=0),                          # as sp_mlp: LayerNorm on S/t tokens
            "w1": ColwiseParallel(input_layouts=Shard(0), use_local_output=False),
            "w2": w2 or RowwiseParallel(output_layouts=Shard(0))}


def megatron_collectives(p, t: int) -> torch.Tensor:
    """What the tp_mlp / sp_mlp lessons make by hand, forward and backward, in OPS counts (none
    on one rank: DTensor skips a collective of one)."""
    if t == 1:
        return torch.zeros(len(OPS), dtype=torch.long)
    if p.plan == "tensor_parallel":
        return torch.tensor([0, 0, 2, 0])          # g forward, f backward: two all-reduces
    return torch.tensor([2, 2, 1, 0])              # all-gather and reduce-scatter each way, LayerNorm's dw


def parallel_block(lab, p, mesh):
    t, r = lab.world_size, lab.rank
    full = make_inputs(p.seq_len, p.hidden, p.ffn, p.seed, lab.device)   # tp_mlp's numbers, same seed
    ref = reference(full)
    cols = slice(r * p.ffn // t, (r + 1) * p.ffn // t)
    rows = slice(r * p.seq_len // t, (r + 1) * p.seq_len // t)
    sp = p.plan == "sequence_parallel"

    block = parallelize_module(MlpBlock(full), mesh, plan_of(p))               # weights become DTensors
    for label, weight in (("W1", block.w1.weight), ("W2", block.w2.weight)):
        lab.show(f"{label} as {name(weight.placements)}", weight.to_local())
    x = (full.x[rows] if sp else full.x).clone().requires_grad_()              # [S/t, H] or [S, H]

    with CommDebugMode() as mode:
        with lab.compute("block forward"):
            y = block(x)                                                       # a plain tensor: this rank's Y
        lab.show("Y", y)
        with lab.compute("backward"):
            y.square().sum().backward()                                        # loss = sum(Y²), as the reference
        norm = block.norm.weight
        if isinstance(norm.grad, DTensor) and norm.grad.placements[0].is_partial():   # SequenceParallel leaves
            with lab.compute("LayerNorm dw: Partial() → Replicate()"):                # each rank its tokens' share
                norm.grad = norm.grad.redistribute(mesh, [Replicate()])              # the all-reduce sp_mlp makes
    lab.check("collectives as Megatron's", counts(mode), megatron_collectives(p, t),
              f"the collectives torch made forward and backward (counts of {', '.join(OPS)}) "
              f"against the {'sp_mlp' if sp else 'tp_mlp'} lesson's")
    grad = {key: getattr(block, key).weight.grad for key in ("norm", "w1", "w2")}
    local = {key: g.to_local() if isinstance(g, DTensor) else g for key, g in grad.items()}
    if sp:
        lab.check("output Y shard", y, ref.out[rows], "this rank's tokens of Y against the same rows of the reference")
        lab.check("input gradient dX shard", x.grad, ref.grads.x[rows],
                  "dL/dX for this rank's tokens against the same rows of the reference")
    else:
        lab.check("output Y", y, ref.out, "this rank's Y against the single-process Y")
        lab.check("input gradient dX", x.grad, ref.grads.x, "dL/dX on this rank against the reference dL/dX")
    lab.check("W1 shard gradient", local["w1"], ref.grads.w1[cols],
              "dL/dW1 for this rank's rows against the same rows of the reference gradient")
    lab.check("W2 shard gradient", local["w2"], ref.grads.w2[:, cols],
              "dL/dW2 for this rank's columns against the same columns of the reference gradient")
    lab.check("LayerNorm weight gradient", local["norm"], ref.grads.ln_w,
              "dL/dw of LayerNorm against the reference")
    if r == 0:
        moved = (4 * p.seq_len * p.hidden + p.hidden) if sp else 2 * p.seq_len * p.hidden
        lab.metric("block_comm_bytes_expected", moved * y.element_size(), "bytes",
                   formula="(all-gather + reduce-scatter) forward and backward, 4 × s·b·h, + h for LayerNorm's dw, × 4 B"
                   if sp else "2 all-reduces (g forward, f backward) × s·b·h elements × 4 B")


def run(lab, p):
    mesh = DeviceMesh.from_group(lab.group("tp"), lab.device.type, mesh_dim_names=("tp",))   # 1-D: every rank
    g = torch.Generator().manual_seed(p.seed)
    full = torch.randn(p.rows, p.cols, generator=g)                            # the same X on every rank
    terms = torch.randn(lab.world_size, p.rows, p.cols, generator=g)           # rank r's term of a sum
    placements_1d(lab, p, mesh, full.to(lab.device), terms.to(lab.device))
    if lab.world_size >= 4 and lab.world_size % 2 == 0:
        placements_2d(lab, p, full.to(lab.device), terms.to(lab.device))
    parallel_block(lab, p, mesh)
