"""Lesson `expert_parallel` on the live server: a top-k mixture-of-experts layer at 1, 2, 4 and 8 ranks
gives the single-process output and gradients; the load per expert and per rank, the dropped tokens
and the all-to-all bytes are recomputed from the raw events (the count all-gather's matrix, the
all-to-alls' labels, shapes and bytes); the skewed router is visibly more imbalanced; combining in
the wrong order fails the output and gradient checks and no other; bad parameters are refused."""

from __future__ import annotations

import math
import re

import pytest

from tests import web
from tests.app.helpers import of_rank, run_all, run_count

DEFAULTS = {"experts": 2, "top_k": 2, "tokens": 8, "hidden": 8, "capacity_factor": 1.25}
CHECKS = ["tokens at the experts", "output Y", "input gradient dX", "router gradient",
          "expert W1 gradient", "expert W2 gradient"]
WRONG_ORDER = {"mistake": "combine_wrong_order"}

CASES = {
    "1": (1, {}), "2": (2, {}), "4": (4, {}), "8": (8, {}),
    "4-skewed": (4, {"skewed_router": True}),
    "8-skewed-top1": (8, {"skewed_router": True, "top_k": 1, "capacity_factor": 2.0}),
    "4-no-drops": (4, {"capacity_factor": 4.0, "top_k": 1}),
    "2-wrong-order": (2, WRONG_ORDER),
    "4-skewed-wrong-order": (4, {**WRONG_ORDER, "skewed_router": True}),
}
CORRECT = [name for name, (_, params) in CASES.items() if "mistake" not in params]
MISTAKEN = [name for name in CASES if name not in CORRECT]


@pytest.fixture(scope="module")
def finished(server) -> dict[str, dict]:
    results = run_all(server, [("expert_parallel", world, params) for world, params in CASES.values()])
    return dict(zip(CASES, results))


def params_of(name: str) -> dict:
    return {**DEFAULTS, **CASES[name][1]}


def metric(run: dict, name: str, rank: int = 0) -> dict:
    [found] = [m for m in run["metrics"] if m["name"] == name and m["rank"] == rank]
    return found


def count_matrix(events: list[dict], rank: int) -> list[list[int]]:
    """What the count all-gather gave this rank: row src, column e = tokens rank src routes to expert e."""
    [end] = of_rank(events, rank, "collective", phase="end", op="all_gather")
    [gathered] = end["tensors"]
    assert gathered["exact"]
    return [[int(v) for v in row] for row in gathered["preview"]]


def all_to_alls(events: list[dict], rank: int, phase: str = "begin") -> dict[str, dict]:
    calls = of_rank(events, rank, "collective", phase=phase, op="all_to_all")
    return {e["label"].split(":")[0]: e for e in calls}


def splits_in(label: str) -> list[int]:
    return [int(n) for n in re.search(r": (\d+(?:·\d+)*) ", label).group(1).split("·")]


@pytest.mark.parametrize("name", CORRECT)
def test_every_check_passes_against_one_process(finished, name):
    world, _ = CASES[name]
    run = finished[name]["run"]
    assert run["status"] == "done", run["error"]
    assert sorted((c["rank"], c["name"]) for c in run["checks"]) == sorted((r, n) for r in range(world) for n in CHECKS)
    assert all(c["passed"] for c in run["checks"]), [c for c in run["checks"] if not c["passed"]]


@pytest.mark.parametrize("name", MISTAKEN)
def test_combining_in_the_wrong_order_fails_the_output_and_gradients_only(finished, name):
    world, _ = CASES[name]
    run = finished[name]["run"]
    assert run["status"] == "done", run["error"]
    failed = {c["name"] for c in run["checks"] if not c["passed"]}
    assert failed == set(CHECKS) - {"tokens at the experts"}
    # the dispatch was right: every rank's experts got the reference's tokens
    assert all(c["passed"] for c in run["checks"] if c["name"] == "tokens at the experts")
    # every rank's output is wrong, and says where
    outputs = [c for c in run["checks"] if c["name"] == "output Y"]
    assert len(outputs) == world and not any(c["passed"] for c in outputs)


@pytest.mark.parametrize("name", CORRECT + MISTAKEN)
def test_load_and_dropped_tokens_recomputed_from_the_events(finished, name):
    world, _ = CASES[name]
    p = params_of(name)
    run, events = finished[name]["run"], finished[name]["events"]
    n_experts = p["experts"] * world
    capacity = math.ceil(p["capacity_factor"] * p["tokens"] * p["top_k"] / n_experts)
    n = count_matrix(events, 0)
    assert len(n) == world and all(len(row) == n_experts and sum(row) == p["tokens"] * p["top_k"] for row in n)
    assert all(count_matrix(events, r) == n for r in range(world))           # every rank knows the same load
    kept = [[min(v, capacity) for v in row] for row in n]
    received = [sum(kept[src][e] for src in range(world) for e in range(r * p["experts"], (r + 1) * p["experts"]))
                for r in range(world)]
    assert metric(run, "capacity")["value"] == capacity
    for r in range(world):
        for key, want in (("tokens_received", received[r]), ("tokens_dropped", sum(n[r]) - sum(kept[r]))):
            got = metric(run, key, r)
            assert (got["value"], got["expected"]) == (want, want), (key, r)
    total = metric(run, "tokens_dropped_total")
    assert total["value"] == total["expected"] == sum(map(sum, n)) - sum(map(sum, kept))
    per_expert = [sum(row[e] for row in n) for e in range(n_experts)]
    assert metric(run, "expert_load_max_over_mean")["value"] == pytest.approx(
        max(per_expert) / (world * p["tokens"] * p["top_k"] / n_experts), abs=1e-4)
    assert metric(run, "rank_load_max_over_mean")["value"] == pytest.approx(max(received) / (sum(received) / world), abs=1e-4)


@pytest.mark.parametrize("name", CORRECT + MISTAKEN)
def test_all_to_all_splits_and_bytes_recomputed_from_the_events(finished, name):
    world, _ = CASES[name]
    p = params_of(name)
    run, events = finished[name]["run"], finished[name]["events"]
    n = count_matrix(events, 0)
    capacity = math.ceil(p["capacity_factor"] * p["tokens"] * p["top_k"] / (p["experts"] * world))
    # sent[i][j]: the rows rank i dispatches to rank j
    sent = [[sum(min(v, capacity) for v in n[i][j * p["experts"]:(j + 1) * p["experts"]]) for j in range(world)]
            for i in range(world)]
    row_bytes = p["hidden"] * 4
    for r in range(world):
        begins, ends = all_to_alls(events, r), all_to_alls(events, r, "end")
        assert list(begins) == ["dispatch", "combine", "combine backward", "dispatch backward"]
        to_each = sent[r]
        from_each = [sent[src][r] for src in range(world)]
        want = {"dispatch": (to_each, from_each), "combine": (from_each, to_each),
                "combine backward": (to_each, from_each), "dispatch backward": (from_each, to_each)}
        for call, (send, recv) in want.items():
            assert splits_in(begins[call]["label"]) == send, (r, call)
            assert begins[call]["label"].endswith(f" ranks 0–{world - 1}")
            assert begins[call]["bytes"] == sum(send) * row_bytes, (r, call)
            assert begins[call]["shape"] == [sum(send), p["hidden"]]
            assert ends[call]["tensors"][0]["shape"] == [sum(recv), p["hidden"]], (r, call)
        for call, key in (("dispatch", "dispatch_bytes"), ("combine", "combine_bytes")):
            got = metric(run, key, r)
            assert got["value"] == got["expected"] == begins[call]["bytes"], (r, key)


def test_the_skewed_router_loads_some_experts_and_ranks_far_more(finished):
    even, skewed = finished["4"]["run"], finished["4-skewed"]["run"]
    for key in ("expert_load_max_over_mean", "rank_load_max_over_mean"):
        assert metric(skewed, key)["value"] > metric(even, key)["value"] + 0.5, key
    assert metric(skewed, "tokens_dropped_total")["value"] > metric(even, "tokens_dropped_total")["value"]
    # some ranks' experts get nothing at all, and the layer is still right
    idle = [r for r in range(4) if metric(skewed, "tokens_received", r)["value"] == 0]
    assert idle
    assert all(c["passed"] for c in skewed["checks"])


def test_a_capacity_large_enough_drops_nothing(finished):
    run = finished["4-no-drops"]["run"]
    assert metric(run, "tokens_dropped_total")["value"] == 0
    assert metric(run, "capacity")["value"] == math.ceil(4.0 * 8 * 1 / 8)


def refused(server, world: int, params: dict) -> dict:
    before = run_count(server)
    response = web.post(f"{server.url}/api/runs",
                        json={"lesson": "expert_parallel", "world_size": world, "params": params})
    assert response.status_code == 422, response.text
    assert run_count(server) == before                                   # nothing started
    return {tuple(e["loc"]): e["msg"] for e in response.json()["detail"]}


@pytest.mark.parametrize("world,params,field,words", [
    (2, {"experts": 1, "top_k": 3}, "top_k", ["top_k=3", "at most", "E = experts × ranks = 2"]),
    (2, {"capacity_factor": 0}, "capacity_factor", ["greater than or equal to 0.1"]),
    (2, {"experts": 9}, "experts", ["less than or equal to 4"]),
    (2, {"mistake": "drop_everything"}, "mistake", ["'none'", "'combine_wrong_order'"]),
], ids=["top_k-over-E", "capacity-0", "experts-9", "unknown-mistake"])
def test_bad_parameters_are_refused_naming_the_field(server, world, params, field, words):
    errors = refused(server, world, params)
    assert ("body", "params", field) in errors, errors
    for word in words:
        assert word in errors[("body", "params", field)]
