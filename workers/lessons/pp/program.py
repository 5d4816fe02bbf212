"""Pipeline parallelism, live: a small MLP stack cut into stages, one (or v) per rank, trained on m
microbatches by paralab's own engine (engine.py: GPipe, 1F1B) or by a schedule torch ships
(torch.distributed.pipelining: GPipe, 1F1B, Interleaved1F1B, ZBVZeroBubble, DualPipeV, …).

Every stage action is timed (F forward, B backward, I input-gradient, W weight-gradient), its sends
and recvs traced, and at the end the loss and every parameter gradient are checked against one
process training the whole stack on the whole batch.

    bubble fraction = idle time / (ranks × makespan)  ≈  (p − 1) / (m + p − 1)  for GPipe and 1F1B

The activations a rank holds are the tensors autograd saves for backward, counted as they are saved
(a layer's weight, which autograd also keeps to compute the input's gradient, is not an activation).
Here a stage keeps its input and its tanh output, A = 2·b·h·4 bytes per microbatch (b rows, width h):
    GPipe peak = m·A on every rank        1F1B peak = min(p − r, m)·A on rank r
"""

import copy
import time
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F

from workers import comm
from workers.lessons.pp import schedules
from workers.lessons.pp.engine import ENGINES, StageRunner

ROWS_PER_MICROBATCH = 2
SLOW_FACTOR = 3


def make_stack(num_stages, hidden, seed):
    torch.manual_seed(seed)                                   # the same weights on every rank
    return [nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()) for _ in range(num_stages)]


def loss_fn(output, target):
    return F.mse_loss(output, target)


class StageTiming:
    """Compute delays (so bubbles show above the noise) and the activations each rank holds."""

    def __init__(self, lab, p, weights):
        self.lab, self.delay = lab, p.delay_ms / 1000
        self.weights = {w.untyped_storage().data_ptr() for w in weights}
        self.slow_stage = p.slow_stage
        self.in_flight, self.bytes_alive, self.saved_bytes = 0, 0, {}
        self.peak_in_flight, self.peak_bytes = 0, 0

    def _sleep(self, stage, units):
        time.sleep(self.delay * units * (SLOW_FACTOR if stage == self.slow_stage else 1))

    @contextmanager
    def forward(self, stage, mb):
        held = {}                                             # each saved activation once

        def pack(t):                                          # every tensor autograd keeps for backward …
            if t.untyped_storage().data_ptr() not in self.weights:   # … but the layer's own weight
                held[(t.data_ptr(), t.numel())] = t.numel() * t.element_size()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            yield
        self._sleep(stage, 1)
        self.saved_bytes[(stage, mb)] = sum(held.values())
        self._change(+1, sum(held.values()))

    @contextmanager
    def backward(self, stage, mb, kind="B"):
        yield
        self._sleep(stage, 2 if kind == "B" else 1)
        if kind in ("B", "I"):
            self._change(-1, -self.saved_bytes.pop((stage, mb), 0))

    def _change(self, count, nbytes):
        self.in_flight += count
        self.bytes_alive += nbytes
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        self.peak_bytes = max(self.peak_bytes, self.bytes_alive)
        self.lab.metric("activations_in_flight", self.in_flight, "microbatches", bytes=self.bytes_alive,
                        formula="microbatches whose forward ran here and whose backward has not")


def run(lab, p):
    world, rank = lab.world_size, lab.rank
    pp = lab.group("pp")
    v = p.virtual_stages
    num_stages = world * v
    placement = schedules.stage_indices(p.schedule, world, p.microbatches, v)
    if rank == 0:
        ideal = schedules.ideal(p.schedule, world, p.microbatches, v)
        lab.emit_event("schedule", schedule=p.schedule, grid=ideal["grid"], notes=ideal["notes"],
                       placement=placement, bubble_fraction=ideal["bubble_fraction"],
                       slow_stage=p.slow_stage, slow_factor=SLOW_FACTOR if p.slow_stage is not None else None)
        formula, expected = bubble_formula(p.schedule, world, p.microbatches, v)
        lab.metric("bubble_fraction_ideal", ideal["bubble_fraction"], "", formula=formula,
                   **({} if expected is None else {"expected": expected}))

    layers = make_stack(num_stages, p.hidden, p.seed)
    reference = [copy.deepcopy(layer) for layer in layers]
    batch = p.microbatches * ROWS_PER_MICROBATCH
    x = torch.randn(batch, p.hidden).to(lab.device)
    target = torch.randn(batch, p.hidden).to(lab.device)
    mine = {s: layers[s].to(lab.device) for s in placement[rank]}

    timing = StageTiming(lab, p, [w for model in mine.values() for w in model.parameters()])
    spans = []                                                # (begin, end) of this rank's compute
    if p.schedule in ENGINES:
        losses = run_own_engine(lab, p, mine, x, target, timing, spans)
    else:
        losses = run_torch_schedule(lab, p, mine, num_stages, x, target, timing, spans, pp)

    check_against_reference(lab, p, reference, mine, x, target, losses, num_stages)
    report_bubbles(lab, p, spans, timing)
    report_activation_bytes(lab, p, timing)


def bubble_formula(schedule, p, m, v):
    """The bubble fraction's closed form for `schedule`, worked for these numbers: (text, value);
    (words, None) for the schedules that have none."""
    if schedule.lower() in ("gpipe", "1f1b"):
        return f"(p − 1) / (m + p − 1) = {p - 1}/{m + p - 1}", (p - 1) / (m + p - 1)
    if schedule in ("Interleaved1F1B", "LoopedBFS"):
        return f"(p − 1) / (v·m + p − 1) = {p - 1}/{v * m + p - 1}", (p - 1) / (v * m + p - 1)
    return ("no closed form — this schedule fills the bubble with weight-gradient (W) work; "
            "the grid's idle slots are the prediction"), None


def activation_bound(schedule, p, m, rank):
    """How many microbatches' activations `rank` may hold at most: (formula, value), or None."""
    return {"1f1b": ("p − rank", p - rank), "gpipe": ("m", m)}.get(schedule.lower())


def run_own_engine(lab, p, mine, x, target, timing, spans):
    (stage, model), = mine.items()
    inputs = list(x.chunk(p.microbatches))
    targets = list(target.chunk(p.microbatches))
    runner = StageRunner(lab, stage, model, inputs, targets, loss_fn, p.microbatches, _Timed(timing, spans))
    ENGINES[p.schedule](runner)
    return runner.losses                                      # each already divided by m


def run_torch_schedule(lab, p, mine, num_stages, x, target, timing, spans, pp):
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import get_schedule_class

    stages = [PipelineStage(model, s, num_stages, lab.device, group=pp) for s, model in mine.items()]
    for stage in stages:
        instrument(lab, stage, _Timed(timing, spans))
    schedule_class = get_schedule_class(p.schedule)
    multi = schedules.is_multi_stage(p.schedule)
    schedule = schedule_class(stages if multi else stages[0], n_microbatches=p.microbatches, loss_fn=loss_fn)
    args, kwargs, losses = [], {}, []
    if 0 in mine:
        args.append(x)
    if num_stages - 1 in mine:
        kwargs.update(target=target, losses=losses)
    schedule.step(*args, **kwargs)
    return [loss / p.microbatches for loss in losses]       # torch scales the gradients by 1/m


class _Timed:
    """Timing contexts that also record this rank's compute spans (for the bubble fraction)."""

    def __init__(self, timing, spans):
        self.timing, self.spans = timing, spans

    @contextmanager
    def forward(self, stage, mb):
        start = time.monotonic()
        with self.timing.forward(stage, mb):
            yield
        self.spans.append((start, time.monotonic()))

    @contextmanager
    def backward(self, stage, mb, kind="B"):
        start = time.monotonic()
        with self.timing.backward(stage, mb, kind):
            yield
        self.spans.append((start, time.monotonic()))


def instrument(lab, stage, timed):
    """Wrap a torch PipelineStage's F, B/I and W so each becomes a timed `compute` span."""
    forward, backward, weight = stage.forward_one_chunk, stage.backward_one_chunk, stage.backward_weight_one_chunk

    def forward_one_chunk(fwd_chunk_id, *args, **kwargs):
        with lab.compute("F", stage=stage.stage_index, microbatch=fwd_chunk_id), \
                timed.forward(stage.stage_index, fwd_chunk_id):
            return forward(fwd_chunk_id, *args, **kwargs)

    def backward_one_chunk(bwd_chunk_id, loss=None, full_backward=True, last_backward=False):
        kind = "B" if full_backward else "I"
        with lab.compute(kind, stage=stage.stage_index, microbatch=bwd_chunk_id), \
                timed.backward(stage.stage_index, bwd_chunk_id, kind):
            return backward(bwd_chunk_id, loss=loss, full_backward=full_backward, last_backward=last_backward)

    def backward_weight_one_chunk(bwd_chunk_id, last_backward=False):
        with lab.compute("W", stage=stage.stage_index, microbatch=bwd_chunk_id), \
                timed.backward(stage.stage_index, bwd_chunk_id, "W"):
            return weight(bwd_chunk_id, last_backward=last_backward)

    stage.forward_one_chunk = forward_one_chunk
    stage.backward_one_chunk = backward_one_chunk
    stage.backward_weight_one_chunk = backward_weight_one_chunk


def check_against_reference(lab, p, reference, mine, x, target, losses, num_stages):
    """One process, the whole stack, the whole batch: the loss is the mean over microbatches."""
    ref_losses = []
    for xb, yb in zip(x.chunk(p.microbatches), target.chunk(p.microbatches)):
        out = xb.cpu()
        for layer in reference:
            out = layer(out)
        ref_losses.append(loss_fn(out, yb.cpu()) / p.microbatches)
    ref_loss = torch.stack(ref_losses).sum()
    ref_loss.backward()
    if num_stages - 1 in mine:
        lab.check("loss", torch.stack(losses).sum(), ref_loss.detach(), "the pipeline's loss against one process's")
    for s, model in mine.items():
        for (name, param), ref_param in zip(model.named_parameters(), reference[s].parameters()):
            lab.check(f"stage {s} {name} gradient", param.grad, ref_param.grad,
                      f"dL/d{name} of stage {s} against the same layer trained in one process")


def report_bubbles(lab, p, spans, timing):
    """Gather every rank's busy time and span: the measured bubble fraction."""
    busy = sum(end - start for start, end in spans)
    mine = torch.tensor([busy, min(s for s, _ in spans), max(e for _, e in spans)], dtype=torch.float64)
    everyone = comm.all_gather(mine[None], label="gather each rank's busy time for the bubble fraction")
    makespan = float(everyone[:, 2].max() - everyone[:, 1].min())
    if lab.rank == 0:
        bubble = 1 - float(everyone[:, 0].sum()) / (lab.world_size * makespan)
        lab.metric("bubble_fraction", bubble, "", formula="idle / (ranks × makespan), measured")
    bound = activation_bound(p.schedule, lab.world_size, p.microbatches, lab.rank)
    lab.metric("peak_activations_in_flight", timing.peak_in_flight, "microbatches",
               **({"formula": bound[0], "bound": bound[1]} if bound else
                  {"formula": "microbatches whose activations this rank held at once, measured"}))


def report_activation_bytes(lab, p, timing):
    """The peak of what this rank held, against m·A (GPipe) or min(p − r, m)·A (1F1B)."""
    a = 2 * ROWS_PER_MICROBATCH * p.hidden * 4                # a stage's input and tanh output, float32
    held = {"gpipe": p.microbatches, "1f1b": min(lab.world_size - lab.rank, p.microbatches)}.get(p.schedule.lower())
    expected = {} if held is None else {"expected": held * a}
    lab.metric("peak_activation_bytes", timing.peak_bytes, "bytes", **expected,
               formula=f"saved activations; GPipe m·A, 1F1B min(p − r, m)·A  (A = 2·b·h·4 = {a} B, "
                       f"m={p.microbatches}, p={lab.world_size}, r={lab.rank})")
