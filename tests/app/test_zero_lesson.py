"""Lesson `zero` on the live server: stages 1, 2 and 3 at 2 and 4 ranks end with the parameters one
process gets from Adam on the whole batch (computed here, independently of the lesson's reference),
and each rank's gradient pieces of the first step are its pieces of one process's gradient; a
reduce-scatter that sums instead of averaging (planted in a copy of the lesson) fails those checks
at every stage, where the parameter checks alone pass (Adam ignores the gradient's scale);
each rank's measured memory equals ZeRO's formulas; the elements communicated per step equal 2Ψ
(stages 1, 2) or 3Ψ (stage 3), both as the lesson's metric and as counted from the traced
collectives; and where a parameter does not cut into N equal pieces (3 ranks), the padded pieces make
the measured figures slightly larger than the formulas."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from tests.app.helpers import of_rank, run_all

LAYERS, HIDDEN, BATCH, STEPS, SEED, LR = 4, 16, 4, 2, 0, 0.01       # the lesson's defaults
PSI = LAYERS * (HIDDEN * HIDDEN + HIDDEN)                            # Ψ = 1088
SIZES = [HIDDEN * HIDDEN, HIDDEN] * LAYERS                           # each parameter's elements
P, G, K = 4, 4, 8                                                    # float32 parameters, gradients; Adam's 2 moments

DIVIDING = [(world, stage) for world in (2, 4) for stage in (1, 2, 3)]
PADDED = [(3, stage) for stage in (1, 2, 3)]                         # 256 and 16 do not cut into 3 pieces
CASES = DIVIDING + PADDED


def key(case) -> str:
    return f"{case[0]}-stage{case[1]}"


@pytest.fixture(scope="module")
def finished(server) -> dict[str, dict]:
    results = run_all(server, [("zero", world, {"stage": stage}) for world, stage in CASES])
    return {key(case): result for case, result in zip(CASES, results)}


def metrics_of(run: dict, rank: int) -> dict[str, dict]:
    return {m["name"]: m for m in run["metrics"] if m["rank"] == rank}


def one_process_adam(world: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The parameters after STEPS Adam steps of one process on the whole batch (world × BATCH rows),
    and the gradients of the first step, flattened."""
    torch.manual_seed(SEED)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.Tanh()) for _ in range(LAYERS)])
    torch.manual_seed(SEED + 1)
    x, y = torch.randn(world * BATCH, HIDDEN), torch.randn(world * BATCH, HIDDEN)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    first_grads = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        first_grads = first_grads or [p.grad.flatten().numpy().copy() for p in model.parameters()]
        optimizer.step()
    return [p.detach().numpy().reshape(-1, p.shape[-1]) for p in model.parameters()], first_grads


def parameter_checks() -> list[str]:
    return [f"parameter {i} after {STEPS} steps" for i in range(len(SIZES))]


def gradient_checks() -> list[str]:
    return [f"gradient {i} piece, step 1" for i in range(len(SIZES))]


def padded(numel: int, world: int) -> int:
    """A parameter cut into `world` equal pieces, the last one padded."""
    return world * math.ceil(numel / world)


@pytest.mark.parametrize("case", CASES, ids=key)
def test_parameters_after_the_steps_equal_one_process(finished, case):
    world, stage = case
    run, got = finished[key(case)]["run"], finished[key(case)]["events"]
    assert run["status"] == "done", run["error"]
    assert run["params"]["stage"] == stage
    names = parameter_checks()
    assert sorted((c["rank"], c["name"]) for c in run["checks"]) == \
        sorted((r, n) for r in range(world) for n in names + gradient_checks())
    assert all(c["passed"] for c in run["checks"]), [c for c in run["checks"] if not c["passed"]]

    want, _ = one_process_adam(world)
    for i, name in enumerate(names):
        shown = [of_rank(got, r, "check", name=name)[0]["tensors"][0] for r in range(world)]
        assert all(s["preview"] == shown[0]["preview"] for s in shown), name   # the same on every rank
        np.testing.assert_allclose(np.array(shown[0]["preview"]), want[i], rtol=1e-3, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("case", CASES, ids=key)
def test_each_ranks_gradient_pieces_are_its_pieces_of_one_process_gradient(finished, case):
    """Rank r's piece of parameter i: elements r·k … (r+1)·k of the flattened gradient, padded with zeros."""
    world, stage = case
    got = finished[key(case)]["events"]
    _, grads = one_process_adam(world)
    for i, name in enumerate(gradient_checks()):
        k = math.ceil(SIZES[i] / world)
        whole = np.pad(grads[i], (0, k * world - SIZES[i]))
        for rank in range(world):
            [check] = of_rank(got, rank, "check", name=name)
            assert check["passed"], check
            shown, want = check["tensors"][0], whole[rank * k:(rank + 1) * k]
            assert shown["shape"] == [k]
            stats = [shown["stats"][s] for s in ("min", "max", "mean", "abs_max")]
            np.testing.assert_allclose(stats, [want.min(), want.max(), want.mean(), abs(want).max()],
                                       rtol=1e-3, atol=1e-7, err_msg=name)
            if k <= 32:                                                     # shown whole
                np.testing.assert_allclose(np.ravel(shown["preview"]), want, rtol=1e-3, atol=1e-7, err_msg=name)


@pytest.fixture(scope="module")
def summed(planted_server) -> dict[int, dict]:
    """A copy of the lesson whose reduce-scatter sums the gradients (the average forgotten), each stage at 2 ranks."""
    results = run_all(planted_server, [("zero_summed", 2, {"stage": stage}) for stage in (1, 2, 3)])
    return dict(zip((1, 2, 3), results))


@pytest.mark.parametrize("stage", (1, 2, 3))
def test_a_reduce_scatter_that_sums_fails_the_gradient_checks(summed, stage):
    run = summed[stage]["run"]
    assert run["status"] == "done", run["error"]
    failed = {(c["rank"], c["name"]) for c in run["checks"] if not c["passed"]}
    gradient = {(r, n) for r in range(2) for n in gradient_checks()}
    assert failed == gradient, "every gradient piece, and only those, is twice the reference"
    assert all(re.fullmatch(r"parameter \d+ after \d+ steps", c["name"]) for c in run["checks"] if c["passed"])


@pytest.mark.parametrize("case", DIVIDING, ids=key)
def test_memory_per_rank_equals_the_formulas(finished, case):
    world, stage = case
    run = finished[key(case)]["run"]
    want = {   # bytes per rank: (parameters, gradients, optimizer state)
        1: (P * PSI, G * PSI, K * PSI / world),
        2: (P * PSI, G * PSI / world, K * PSI / world),
        3: (P * PSI / world, G * PSI / world, K * PSI / world),
    }[stage]
    for rank in range(world):
        metrics = metrics_of(run, rank)
        for name, bytes_ in zip(("memory_parameters", "memory_gradients", "memory_optimizer_state"), want):
            assert metrics[name]["value"] == bytes_, (rank, name, metrics[name])
            assert metrics[name]["expected"] == bytes_, (rank, name, metrics[name])
            assert metrics[name]["unit"] == "bytes"
            assert f"Ψ={PSI}, N={world}" in metrics[name]["formula"]


@pytest.mark.parametrize("world", (2, 4))
def test_each_stage_holds_less_than_the_one_before(finished, world):
    names = ("memory_parameters", "memory_gradients", "memory_optimizer_state")
    total = [sum(metrics_of(finished[f"{world}-stage{stage}"]["run"], 0)[name]["value"] for name in names)
             for stage in (1, 2, 3)]
    assert total[0] > total[1] > total[2] == (P + G + K) * PSI / world


@pytest.mark.parametrize("case", CASES, ids=key)
def test_elements_communicated_per_step(finished, case):
    world, stage = case
    run, got = finished[key(case)]["run"], finished[key(case)]["events"]
    passes = 2 if stage < 3 else 3          # reduce-scatter + all-gather; stage 3 gathers again for backward
    predicted = passes * PSI
    sent = passes * sum(padded(n, world) for n in SIZES)
    if (world, stage) in DIVIDING:
        assert sent == predicted
    else:
        assert predicted < sent <= predicted + passes * len(SIZES) * (world - 1)   # at most the padding
    for rank in range(world):
        metric = metrics_of(run, rank)["comm_elements_per_step"]
        assert (metric["value"], metric["expected"], metric["unit"]) == (sent, predicted, "elements")
        # the same count from the traced collectives (nccl-tests' size: the full tensor), per step
        begins = of_rank(got, rank, "collective", phase="begin")
        assert {e["op"] for e in begins} == {"all_gather", "reduce_scatter"}
        assert all(e["dtype"] == "float32" for e in begins)
        assert sum(e["bytes"] for e in begins) / 4 / STEPS == sent
        ops = [e["op"] for e in begins]
        assert ops.count("reduce_scatter") == STEPS * len(SIZES)
        assert ops.count("all_gather") == STEPS * len(SIZES) * (passes - 1)


@pytest.mark.parametrize("case", DIVIDING, ids=key)
def test_when_the_gradients_are_reduce_scattered(finished, case):
    """Stage 1 reduce-scatters after backward; stages 2 and 3 while backward runs."""
    world, stage = case
    got = finished[key(case)]["events"]
    for rank in range(world):
        for step in range(STEPS):
            [begin] = of_rank(got, rank, "compute", name=f"forward + backward {step}", phase="begin")
            [end] = of_rank(got, rank, "compute", name=f"forward + backward {step}", phase="end")
            [adam] = of_rank(got, rank, "compute", name=f"Adam on my pieces {step}", phase="begin")
            scatters = [e for e in of_rank(got, rank, "collective", phase="begin", op="reduce_scatter")
                        if begin["t"] <= e["t"] <= adam["t"]]
            assert len(scatters) == len(SIZES)
            inside = [begin["t"] <= e["t"] <= end["t"] for e in scatters]
            assert all(inside) if stage >= 2 else not any(inside), (rank, step)


@pytest.mark.parametrize("case", PADDED, ids=key)
def test_padding_makes_the_measured_memory_slightly_larger(finished, case):
    world, stage = case
    run = finished[key(case)]["run"]
    piece = sum(padded(n, world) for n in SIZES) // world           # the elements a rank owns, padding included
    want = {1: (P * PSI, G * PSI, K * piece), 2: (P * PSI, G * piece, K * piece),
            3: (P * piece, G * piece, K * piece)}[stage]
    for rank in range(world):
        metrics = metrics_of(run, rank)
        for name, bytes_ in zip(("memory_parameters", "memory_gradients", "memory_optimizer_state"), want):
            assert metrics[name]["value"] == bytes_, (rank, name)
            assert metrics[name]["expected"] <= bytes_ < metrics[name]["expected"] + K * len(SIZES)
