"""Lesson `dp` on the live server: naive and bucketed data parallel at 1, 2 and 4 ranks end the SGD
step with the same parameters on every rank — the ones a single process training on the whole batch
gets, computed here independently of the lesson's own reference; bucketed runs launch their buckets'
all-reduces during backward (the timeline overlaps), naive runs only after it; and the number and
size of the buckets follow bucket_size."""

from __future__ import annotations


import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from tests.app.helpers import of_rank, run_all

WORLDS = (1, 2, 4)
LAYERS, HIDDEN, BATCH, SEED, LR = 4, 16, 4, 0, 0.1          # the lesson's defaults
PSI = LAYERS * (HIDDEN * HIDDEN + HIDDEN)                    # 1088 parameters

# (world, params) → key; the default bucket_size is 600
CASES = {f"{world}-{'bucketed' if bucketed else 'naive'}": (world, {"bucketed": bucketed})
         for world in WORLDS for bucketed in (False, True)}
BUCKET_SIZES = {1: "one per parameter", HIDDEN * HIDDEN + HIDDEN: "one per layer", 1_000_000: "one bucket"}
CASES.update({f"2-bucket_size={size}": (2, {"bucketed": True, "bucket_size": size}) for size in BUCKET_SIZES})


@pytest.fixture(scope="module")
def finished(server) -> dict[str, dict]:
    results = run_all(server, [("dp", world, params) for world, params in CASES.values()])
    return dict(zip(CASES, results))


def one_process_step(world: int) -> dict[str, np.ndarray]:
    """The parameters after one SGD step of one process on the whole batch (world × BATCH rows)."""
    torch.manual_seed(SEED)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.Tanh()) for _ in range(LAYERS)])
    torch.manual_seed(SEED + 1)
    x, y = torch.randn(world * BATCH, HIDDEN), torch.randn(world * BATCH, HIDDEN)
    F.mse_loss(model(x), y).backward()
    return {name: (param - LR * param.grad).detach().numpy().reshape(-1, param.shape[-1])
            for name, param in model.named_parameters()}


def backward_spans(got: list[dict], rank: int) -> dict[str, tuple[float, float]]:
    """Each "B layer i" span of the rank: name → (begin t, end t)."""
    spans = {}
    for event in of_rank(got, rank, "compute"):
        if event["name"].startswith("B layer"):
            begin, end = spans.get(event["name"], (None, None))
            spans[event["name"]] = (event["t"], end) if event["phase"] == "begin" else (begin, event["t"])
    return spans


@pytest.mark.parametrize("key", CASES)
def test_every_rank_ends_with_the_one_process_parameters(finished, key):
    world, params = CASES[key]
    run, got = finished[key]["run"], finished[key]["events"]
    assert run["status"] == "done", run["error"]
    names = [f"{layer}.0.{kind}" for layer in range(LAYERS) for kind in ("weight", "bias")]
    assert sorted((c["rank"], c["name"]) for c in run["checks"]) == sorted(
        (r, f"{n} after the step") for r in range(world) for n in names)
    assert all(c["passed"] for c in run["checks"]), [c for c in run["checks"] if not c["passed"]]

    want = one_process_step(world)
    for name in names:
        shown = [of_rank(got, r, "check", name=f"{name} after the step")[0]["tensors"][0] for r in range(world)]
        assert all(s["exact"] for s in shown)
        # the value each rank shows is the same on every rank …
        assert all(s["preview"] == shown[0]["preview"] for s in shown), name
        # … and is what one process on the whole batch gets (previews keep 4 significant digits)
        np.testing.assert_allclose(np.array(shown[0]["preview"]), want[name], rtol=1e-3, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("world", WORLDS)
def test_bucketed_all_reduces_overlap_the_backward(finished, world):
    got = finished[f"{world}-bucketed"]["events"]
    for rank in range(world):
        spans = backward_spans(got, rank)
        assert sorted(spans) == [f"B layer {i}" for i in range(LAYERS)]
        last_backward_end = spans["B layer 0"][1]               # backward ends with the first layer
        assert last_backward_end == max(end for _, end in spans.values())
        begins = of_rank(got, rank, "collective", phase="begin")
        assert begins and all(e["op"] == "all_reduce" and e["label"].startswith("bucket") for e in begins)
        assert min(e["t"] for e in begins) < last_backward_end, (rank, [e["t"] for e in begins], last_backward_end)
        # each launched all-reduce ends (when waited on), and before the optimizer step uses the gradients
        ends = {e["cseq"]: e for e in of_rank(got, rank, "collective", phase="end")}
        assert sorted(ends) == sorted(e["cseq"] for e in begins)
        [step] = of_rank(got, rank, "compute", name="optimizer step", phase="begin")
        for begin in begins:
            assert begin["t"] <= ends[begin["cseq"]]["t"] <= step["t"]
            assert ends[begin["cseq"]]["duration"] >= 0


@pytest.mark.parametrize("world", WORLDS)
def test_naive_all_reduces_start_after_the_whole_backward(finished, world):
    got = finished[f"{world}-naive"]["events"]
    for rank in range(world):
        backward_end = max(end for _, end in backward_spans(got, rank).values())
        begins = of_rank(got, rank, "collective", phase="begin")
        assert len(begins) == 2 * LAYERS                        # one per gradient
        assert all(e["op"] == "all_reduce" and e["t"] >= backward_end for e in begins), rank
        assert sorted(e["bytes"] for e in begins) == sorted([4 * HIDDEN * HIDDEN] * LAYERS + [4 * HIDDEN] * LAYERS)


@pytest.mark.parametrize("bucket_size,want", [
    (600, [816, 272]),                                          # layers 3, 2, 1 reach 600; layer 0 is left
    (1, [HIDDEN] * LAYERS + [HIDDEN * HIDDEN] * LAYERS),        # one per parameter
    (HIDDEN * HIDDEN + HIDDEN, [HIDDEN * HIDDEN + HIDDEN] * LAYERS),   # a bias and its weight: one per layer
    (1_000_000, [PSI]),                                         # everything in one bucket
], ids=lambda v: str(v) if isinstance(v, int) else None)
def test_bucket_count_and_sizes_follow_bucket_size(finished, bucket_size, want):
    key = "2-bucketed" if bucket_size == 600 else f"2-bucket_size={bucket_size}"
    run, got = finished[key]["run"], finished[key]["events"]
    assert run["status"] == "done", run["error"]
    assert run["params"]["bucket_size"] == bucket_size
    for rank in range(2):
        begins = of_rank(got, rank, "collective", phase="begin")
        assert len(begins) == len(want), [e["label"] for e in begins]
        elements = [int(e["label"].split(": ")[1].split()[0]) for e in begins]
        assert sorted(elements) == sorted(want)
        assert sum(elements) == PSI                             # every gradient, exactly once
        assert [e["bytes"] for e in begins] == [4 * n for n in elements]
        assert sorted(e["label"].split(":")[0] for e in begins) == sorted(f"bucket {b}" for b in range(len(want)))
        if bucket_size == 600:                                  # the last layers' bucket is ready, and sent, first
            assert elements == want
