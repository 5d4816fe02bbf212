"""The judge's comparisons, run outside the sandbox on what each rank reported: a rank's tensor
against the single-process reference, an observed fact against the rule, the communication the
rank's tracer recorded against the calls the technique makes. Each returns one check row.
"""

from __future__ import annotations

import math

import torch

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


def performed(calls: list[dict], kinds=("collective",)) -> list[tuple]:
    """(op, group, shape) of each traced call, in order."""
    return [(c["op"], c["group"], list(c["shape"])) for c in calls if c["kind"] in kinds]


def describe(calls: list[tuple]) -> list[str]:
    return [f"{op} on {group} of {list(shape)}" for op, group, shape in calls]


def communication(rank: int, calls: list[dict], expected: list[tuple], detail: str) -> dict:
    """The collectives this rank made against those expected, in order."""
    made = performed(calls)
    wanted = [(op, group, list(shape)) for op, group, shape in expected]
    return fact(rank, "communication", made == wanted, detail, describe(wanted), describe(made))
