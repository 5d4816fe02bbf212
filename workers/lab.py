"""`Lab`: what a lesson's rank program is handed — who it is, its process groups, and the ways to
show a tensor, time a computation, check against the reference and report a metric.

Passed in explicitly, never global (a rank program's only inputs are `lab` and its parameters).
"""

from __future__ import annotations

import dataclasses
import math
import socket
from contextlib import contextmanager

import torch
import torch.distributed as dist

from workers import protocol
from workers.protocol import Check, Compute, Metric
from workers.tracer import Tracer

_METRIC_FIELDS = frozenset(f.name for f in dataclasses.fields(Metric))


class Lab:
    def __init__(self, tracer: Tracer, rank: int, world_size: int, device: torch.device, host: str | None = None):
        self.rank = rank
        self.host = host or socket.gethostname()     # on a Ray cluster: the node's name (ranks of one host share it)
        self.world_size = world_size
        self.device = device
        self._tracer = tracer
        self._groups: dict[str, object] = {}

    def group(self, name: str, ranks: list[int] | None = None):
        """The process group called `name`; with `ranks` left out, every rank of the run. Each name is
        a group of its own: a second name for every rank (three_d's tp, pp and dp on one rank) gets a
        new group, so the calls on the first keep their name."""
        if name not in self._groups:
            members = list(range(self.world_size)) if ranks is None else sorted(ranks)
            world_named = any(pg is dist.group.WORLD for pg in self._groups.values())
            everyone = members == list(range(self.world_size)) and not world_named
            pg = dist.group.WORLD if everyone else dist.new_group(members)
            self._tracer.name_group(pg, name)
            self._groups[name] = pg
        return self._groups[name]

    def show(self, name: str, tensor: torch.Tensor, inside: str | None = None,
             full_shape: tuple[int, ...] | None = None, offset: tuple[int, ...] | None = None,
             origin: list[list[int]] | None = None) -> None:
        """Snapshot a tensor for the page. A shard names the full tensor it sits `inside`, that
        tensor's `full_shape`, and the `offset` of its first element there. `origin` lists, for each
        element (flattened), the ranks its value came from."""
        fields = {}
        if inside is not None:
            fields["place"] = {"inside": inside, "full_shape": list(full_shape), "offset": list(offset)}
        if origin is not None:
            fields["origin"] = origin
        self._tracer.snapshot(name, tensor, **fields)

    @contextmanager
    def untraced(self):
        """Run torch.distributed calls without events (timing loops, calibration)."""
        with self._tracer.paused():
            yield

    @contextmanager
    def compute(self, name: str, stage: int | None = None, microbatch: int | None = None):
        """Time a local computation as a `compute` span (`F`, `B`, `GELU`, …)."""
        self.compute_edge("begin", name, stage, microbatch)
        try:
            yield
        finally:
            self.compute_edge("end", name, stage, microbatch)

    def compute_edge(self, phase: str, name: str, stage: int | None = None, microbatch: int | None = None) -> None:
        """One end of a `compute` span, for spans that open and close in different hooks."""
        self._tracer.emit(Compute(phase=phase, rank=self.rank, t=self._tracer.clock(), name=name, stage=stage,
                                  microbatch=microbatch).to_dict())

    def check(self, name: str, actual: torch.Tensor, expected: torch.Tensor, detail: str,
              atol: float = 1e-5, rtol: float = 1e-4) -> bool:
        """Compare with the single-process reference: every element within atol + rtol·max|expected|
        (float32 sums taken in another order differ by rounding, in proportion to the values'
        scale); a `check` event says what was compared and how far off it is."""
        actual, expected = actual.detach(), expected.detach().to(actual.device)
        differences = []
        if actual.shape != expected.shape:
            err, passed = float("inf"), False
            detail = f"{detail} (shape {list(actual.shape)} vs reference {list(expected.shape)})"
        else:
            diff = (actual.float() - expected.float()).abs()
            err = float(diff.max()) if actual.numel() else 0.0
            scale = float(expected.float().abs().max()) if expected.numel() else 0.0
            passed = err <= atol + rtol * scale
            if not passed:
                differences = furthest_from_reference(diff, actual, expected)
        event = Check(rank=self.rank, t=self._tracer.clock(), name=name, passed=passed,
                      max_abs_err=err if math.isfinite(err) else str(err), atol=atol, rtol=rtol, detail=detail,
                      differences=differences or None).to_dict()
        event["tensors"] = self._tracer.previews(
            [actual, expected], [f"{name} (this rank)", f"{name} (reference)"], event)
        self._tracer.emit(event)
        return passed

    def emit_event(self, kind: str, **fields) -> None:
        """Any other event (e.g. a pipeline's ideal `schedule`), built by its kind's constructor in
        workers/protocol.py (a field it does not have raises a TypeError naming it)."""
        self._tracer.emit(protocol.event(kind, rank=self.rank, t=self._tracer.clock(), **fields))

    def metric(self, name: str, value: float, unit: str = "", formula: str | None = None, **fields) -> None:
        """A number for the page (`formula` says how it is predicted, in the lesson's symbols;
        `fields` adds related numbers: `expected` (the formula's value), `psi`, `bytes`… — see the
        `Metric` event — or any other number, sent as it is)."""
        named = {key: value for key, value in fields.items() if key in _METRIC_FIELDS}
        others = {key: value for key, value in fields.items() if key not in _METRIC_FIELDS}
        event = Metric(rank=self.rank, t=self._tracer.clock(), name=name, value=value, unit=unit,
                       formula=formula or None, **named).to_dict()
        self._tracer.emit({**event, **others})


def furthest_from_reference(diff: torch.Tensor, actual: torch.Tensor, expected: torch.Tensor,
                            count: int = 5) -> list[dict]:
    """The elements furthest from the reference: index, this rank's value, the reference's."""
    flat = diff.flatten().nan_to_num(float("inf"))
    rows = []
    for i in flat.topk(min(count, flat.numel())).indices.tolist():
        index = [int(k) for k in torch.unravel_index(torch.tensor(i), actual.shape)] if actual.dim() else []
        got, want = float(actual.flatten()[i]), float(expected.flatten()[i])
        rows.append({"index": index, "got": got if math.isfinite(got) else str(got),   # JSON has no NaN
                     "expected": want if math.isfinite(want) else str(want)})
    return rows
