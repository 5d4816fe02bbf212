"""The judge's comparisons, run outside the sandbox on what each rank reported: a rank's tensor
against the single-process reference, an observed fact against the rule, the communication the
rank's tracer recorded against the calls the technique makes. Each returns one check row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from workers.cost_model import wire_bytes
from workers.lab import furthest_from_reference


def row(rank: int, name: str, passed: bool, detail: str, **fields) -> dict:
    return {"kind": "check", "rank": rank, "name": name, "passed": bool(passed), "detail": detail, **fields}


def compare(rank: int, outputs: dict, name: str, expected: torch.Tensor, detail: str,
            atol: float = 1e-5, rtol: float = 1e-4) -> dict:
    """The rank's output `name` against the reference: every element within atol + rtol·max|expected|
    (float32 sums taken in another order differ by rounding, in proportion to the values' scale)."""
    actual = outputs.get(name)
    if not isinstance(actual, torch.Tensor):
        return row(rank, name, False, f"{detail} (this rank did not report it)", max_abs_err="inf")
    expected = expected.detach()
    if actual.shape != expected.shape:
        return row(rank, name, False, f"{detail} (shape {list(actual.shape)} vs reference {list(expected.shape)})",
                   max_abs_err="inf", atol=atol, rtol=rtol)
    diff = (actual.double() - expected.double()).abs()
    err = float(diff.max()) if actual.numel() else 0.0
    scale = float(expected.double().abs().max()) if expected.numel() else 0.0
    passed = err <= atol + rtol * scale          # NaN compares false: fails
    fields = {"max_abs_err": err if math.isfinite(err) else str(err), "atol": atol, "rtol": rtol}
    if not passed:
        fields["differences"] = furthest_from_reference(diff, actual, expected)
    return row(rank, name, passed, detail, **fields)


def fact(rank: int, name: str, passed: bool, detail: str, expected: list[str], performed: list[str]) -> dict:
    """An observed fact (an order, a count) against the rule."""
    return row(rank, name, passed, detail, expected=expected, performed=performed)


P2P = ("send", "recv")
ELEMENT_BYTES = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class Call:
    """One collective or send/recv as the pattern compares it: what, on which group, of what shape,
    to or from whom (send/recv only), in what dtype."""
    op: str
    group: str
    shape: tuple
    peer: int | None = None
    dtype: str = "float32"

    def wire_bytes(self, world: int) -> int:
        """What this rank sends on the wire for the call (workers/cost_model.py's factors); an
        all-gather's size is its output, `world` times the shard it is given."""
        size = math.prod(self.shape) * ELEMENT_BYTES.get(self.dtype, 4) * (world if self.op == "all_gather" else 1)
        return wire_bytes(self.op, world, size)

    def __str__(self) -> str:
        where = f" {'to' if self.op == 'send' else 'from'} rank {self.peer}" if self.op in P2P else f" on {self.group}"
        dtype = "" if self.dtype == "float32" else f" {self.dtype}"
        return f"{self.op}{where} of {list(self.shape)}{dtype}"


def performed(calls: list[dict], kinds=("collective",)) -> list[Call]:
    """Each traced call of these kinds, in order."""
    return [Call(c["op"], c["group"], tuple(c["shape"]), c.get("peer") if c["op"] in P2P else None,
                 c.get("dtype") or "float32") for c in calls if c["kind"] in kinds]


def describe(calls: list[Call]) -> list[str]:
    return [str(c) for c in calls]


def first_difference(made: list[Call], wanted: list[Call]) -> str | None:
    """Where the calls part from the reference's, in words: "call 2: all_reduce on dp of [512] where
    the reference makes reduce_scatter on dp of [512]", a call missing, or one too many."""
    for i, (got, want) in enumerate(zip(made, wanted), start=1):
        if got != want:
            return f"call {i}: {got} where the reference makes {want}"
    if len(made) < len(wanted):
        return f"call {len(made) + 1}: the reference makes {wanted[len(made)]}, this rank made nothing more"
    if len(made) > len(wanted):
        return f"call {len(wanted) + 1}: {made[len(wanted)]}, which the reference does not make"
    return None


def communication(rank: int, calls: list[dict], expected: list[tuple], detail: str, world: int,
                  kinds=("collective",)) -> dict:
    """The rank's calls against the reference's pattern: the sequence of calls (op, group, shape,
    peer, dtype) and the bytes this rank sent. Fails naming the first call that differs."""
    made = performed(calls, kinds)
    wanted = [c if isinstance(c, Call) else Call(c[0], c[1], tuple(c[2]), *c[3:]) for c in expected]
    sent, reference_sent = (sum(c.wire_bytes(world) for c in cs) for cs in (made, wanted))
    difference = first_difference(made, wanted)
    if difference and sent != reference_sent:
        difference += f"; it sent {sent} bytes, the reference {reference_sent}"
    return row(rank, "communication", difference is None, detail if difference is None else f"{detail} — {difference}",
               expected=describe(wanted), performed=describe(made), bytes_sent=sent, reference_bytes_sent=reference_sent)
