"""FSDP2: torch's own `fully_shard` (torch.distributed.fsdp), on the ZeRO lesson's model and data.

`fully_shard(layer)` turns each of the layer's parameters into a DTensor sharded by rows,
`Shard(0)` on the mesh's one dimension: rank r keeps rows r·h/N … (r+1)·h/N of every weight, and
Adam's state for them. Each layer is one unit: its weights are gathered whole as one all-gather.

    forward   layer i: all-gather its weights ─ compute ─ free them (reshard_after_forward=True)
    backward  layer i: all-gather them again  ─ compute ─ reduce-scatter its gradient ─ free
    step      Adam on each rank's rows only: nothing to gather, nothing to send

It is ZeRO stage 3 (see the `zero` lesson, same model, same numbers): per rank PΨ/N + GΨ/N + KΨ/N
bytes between steps (P = G = 4 B float32, K = 8 B Adam's two moments), and 3Ψ elements moved per
step. `reshard_after_forward=False` keeps the gathered weights from forward to backward: 2Ψ moved,
the whole model held at the end of forward. `prefetch` gathers the next layer while this one computes.
"""

import copy

import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard

from workers.lessons.zero.program import LR, make_model

P, G, K = 4, 4, 8                                          # bytes per element: parameters, gradients, Adam's state


def groups(model):
    """What fully_shard keeps for each layer: its parameters, sharded and (when gathered) whole, and
    an all-gather still in flight (a prefetch). FSDP2's own bookkeeping, read here only to measure."""
    return [layer._get_fsdp_state()._fsdp_param_group for layer in model]


def local_bytes(tensor):
    if tensor is None:
        return 0
    local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
    return local.numel() * local.element_size()


def held(model, optimizer) -> tuple[int, int, int]:
    """Bytes this rank holds now: parameters (its rows, plus any layer gathered whole), gradients,
    and Adam's state."""
    params = grads = 0
    for group in groups(model):
        in_flight = group._all_gather_result                           # gathered, not yet unpacked
        params += in_flight.all_gather_output.untyped_storage().nbytes() if in_flight is not None else 0
    for unit in (param for group in groups(model) for param in group.fsdp_params):
        params += local_bytes(unit.sharded_param)
        params += sum(t.untyped_storage().nbytes() for t in unit.all_gather_outputs)   # 0 once freed
        grads += local_bytes(unit.sharded_param.grad)
        whole = getattr(unit, "_unsharded_param", None)
        grads += local_bytes(whole.grad) if whole is not None else 0
    state = sum(local_bytes(t) for s in optimizer.state.values() for t in s.values()
                if torch.is_tensor(t) and t.dim() > 0)
    return params, grads, state


class MemoryTimeline:
    """Samples `held` as the first step goes: at the start, as each layer starts its forward and its
    backward (its weights gathered by then), after backward and after Adam. Also times each layer's
    forward and backward as `compute` spans, so the page shows the gathers around them."""

    def __init__(self, lab, model, optimizer):
        self.lab, self.model, self.optimizer = lab, model, optimizer
        self.moments: list[str] = []
        self.rows: list[tuple[int, int, int]] = []
        self.recording = True
        for i, layer in enumerate(model):
            layer.register_forward_pre_hook(lambda *_, i=i: self._begin(f"forward layer {i}"))
            layer.register_forward_hook(lambda *_, i=i: self._end(f"forward layer {i}"))
            layer.register_full_backward_pre_hook(lambda *_, i=i: self._begin(f"backward layer {i}"))
            layer.register_full_backward_hook(lambda *_, i=i: self._end(f"backward layer {i}"))

    def sample(self, moment: str) -> None:
        if self.recording:
            self.moments.append(moment)
            self.rows.append(held(self.model, self.optimizer))

    def _begin(self, name):
        self.sample(name)
        self.lab.compute_edge("begin", name)

    def _end(self, name):
        self.lab.compute_edge("end", name)

    def peak(self, column: int, prefix: str) -> int:
        return max(row[column] for moment, row in zip(self.moments, self.rows) if moment.startswith(prefix))


def run(lab, p):
    world, rank = lab.world_size, lab.rank
    mesh = DeviceMesh.from_group(lab.group("dp"), lab.device.type, mesh_dim_names=("dp",))
    reference = make_model(p).to(lab.device)                          # one process, the whole batch
    model = copy.deepcopy(reference)
    if p.mistake == "rank_seeded_init":                                # the bug: each rank its own weights
        model = make_model(p.model_copy(update={"seed": p.seed + rank})).to(lab.device)
    torch.manual_seed(p.seed + 1)
    x = torch.randn(world * p.batch_per_rank, p.hidden).to(lab.device)
    y = torch.randn(world * p.batch_per_rank, p.hidden).to(lab.device)
    mine = slice(rank * p.batch_per_rank, (rank + 1) * p.batch_per_rank)
    psi = sum(param.numel() for param in model.parameters())           # Ψ
    psi_layer = psi // p.layers                                        # Ψ_l = h² + h

    for layer in model:                                                # one unit per layer, then the root
        fully_shard(layer, mesh=mesh, reshard_after_forward=p.reshard_after_forward)
    fully_shard(model, mesh=mesh, reshard_after_forward=p.reshard_after_forward)
    if p.prefetch:                                                     # ask for the neighbour's weights early
        for this, after in zip(model, model[1:]):
            this.set_modules_to_forward_prefetch([after])
            after.set_modules_to_backward_prefetch([this])
    rows = slice(rank * p.hidden // world, (rank + 1) * p.hidden // world)
    for name, param in model.named_parameters():                       # DTensor, Shard(0): my rows
        lab.show(name, param.to_local(), inside=name, full_shape=tuple(param.shape),
                 offset=(rows.start,) + (0,) * (param.dim() - 1))

    optimizer = torch.optim.Adam(model.parameters(), lr=LR)           # its state: DTensors, my rows only
    timeline = MemoryTimeline(lab, model, optimizer)
    timeline.sample("start")
    first_grads = []
    for step in range(p.steps):
        F.mse_loss(model(x[mine]), y[mine]).backward()                 # gathers and reduce-scatters inside
        timeline.sample("after backward")
        first_grads = first_grads or [param.grad.to_local().clone() for param in model.parameters()]
        with lab.compute(f"Adam on my rows {step}"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)                     # the gradient rows stay allocated
        timeline.sample("after Adam")
        timeline.recording = False

    report(lab, p, model, optimizer, timeline, psi, psi_layer)

    ref_optimizer = torch.optim.Adam(reference.parameters(), lr=LR)
    for step in range(p.steps):
        F.mse_loss(reference(x), y).backward()
        if step == 0:
            for i, (grad, ref) in enumerate(zip(first_grads, reference.parameters())):
                lab.check(f"gradient {i} rows, step 1", grad, ref.grad[rows],
                          "my rows of the reduce-scattered (averaged) gradient against the same rows of one process's")
        ref_optimizer.step()
        ref_optimizer.zero_grad()
    for i, (param, ref) in enumerate(zip(model.parameters(), reference.parameters())):
        lab.check(f"parameter {i} after {p.steps} steps", param.to_local(), ref.detach()[rows],
                  "my rows of the parameter against the same rows of one process with Adam on the whole batch")


def report(lab, p, model, optimizer, timeline, psi, psi_layer):
    """Memory between steps beside ZeRO-3's formula (the `zero` lesson's names and numbers); the
    peak while gathering beside what reshard_after_forward and prefetch predict; the timeline."""
    world, h = lab.world_size, p.hidden
    symbols = f"(Ψ={psi}, N={world}, P=G=4, K=8)"
    for name, measured, formula, expected in zip(
            ("parameters", "gradients", "optimizer_state"), held(model, optimizer),
            ("PΨ/N", "GΨ/N", "KΨ/N"), (P * psi / world, G * psi / world, K * psi / world)):
        lab.metric(f"memory_{name}", measured, "bytes", expected=expected, psi=psi, formula=f"{formula}  {symbols}")

    gathered = p.layers if not p.reshard_after_forward else min(p.layers, 2 if p.prefetch else 1)
    lab.metric("peak_parameters_forward", timeline.peak(0, "forward"), "bytes", psi=psi,
               expected=P * psi / world + P * psi_layer * gathered,
               formula=f"PΨ/N + g·PΨ_l, g = {gathered} layer(s) whole at once "
                       f"(L if reshard_after_forward is off, 2 with prefetch, else 1)  (Ψ_l=h²+h={psi_layer}, L={p.layers})")
    timeline_tensor = torch.tensor(timeline.rows, dtype=torch.float64)        # [moments, 3]
    lab.show("memory over the first step (bytes): parameters, gradients, Adam's state", timeline_tensor)
    lab.metric("memory_moments", len(timeline.moments), "moments", moments=timeline.moments,
               formula="start, each layer's forward, each layer's backward, after backward, after Adam")
    if lab.rank == 0:
        moved = (2 if not p.reshard_after_forward else 3) * psi
        lab.metric("comm_elements_per_step_expected", moved, "elements", psi=psi,
                   formula="3Ψ: all-gather forward, all-gather backward, reduce-scatter (ZeRO-3); "
                           "2Ψ with reshard_after_forward off")
