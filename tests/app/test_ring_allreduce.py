"""Lesson `ring_allreduce` on the live server: the ring (reduce-scatter then all-gather around r → r+1)
and recursive doubling (swap with r XOR 2ᵏ), built from send/recv, end with the plain sum of the
inputs (the lesson's checks compare with one process's sum, no collective) at 2, 3, 4 and 8 ranks;
the ring takes exactly 2(p−1) steps of one chunk each, recursive doubling log₂p steps of the whole
tensor; and the step metrics, counted from what rank 0 did, equal the sends in the log — only for
an algorithm that ran."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests import web
from tests.app.helpers import of_rank, run_all, run_count

WORLDS = (2, 3, 4, 8)
RING_LABELS = ("reduce-scatter step", "all-gather step")


def _cases() -> list[tuple[int, dict]]:
    cases = []
    for world in WORLDS:
        cases.append((world, {}))
        if world == 4:      # the worked example below; each algorithm alone is proved at 2, 3 and 8
            continue
        cases.append((world, {"algorithm": "ring", "size": 3 * world}))
        if world & (world - 1) == 0:
            cases.append((world, {"algorithm": "recursive_doubling"}))
    return cases


CASES = _cases()


def case_id(case) -> str:
    world, params = case
    return f"{world}-{params.get('algorithm', 'both')}" + (f"-size={params['size']}" if "size" in params else "")


@pytest.fixture(scope="module")
def finished(server) -> dict[str, dict]:
    results = run_all(server, [("ring_allreduce", world, params) for world, params in CASES])
    return {case_id(case): result for case, result in zip(CASES, results)}


def plain_sum(world: int, size: int) -> list[float]:
    """Rank r's input is arange(size) + 10r; the all-reduced sum of them all."""
    return (np.arange(size)[None, :] + 10 * np.arange(world)[:, None]).sum(0).astype(float).tolist()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_results_equal_the_plain_sum(finished, case):
    world, params = case
    run, got = finished[case_id(case)]["run"], finished[case_id(case)]["events"]
    assert run["status"] == "done", run["error"]
    algorithm = params.get("algorithm", "both")
    size = params.get("size") or 2 * world
    power_of_two = world & (world - 1) == 0
    names = []
    if algorithm in ("both", "ring"):
        names.append("ring all-reduce")
    if algorithm == "recursive_doubling" or (algorithm == "both" and power_of_two):
        names.append("recursive doubling all-reduce")
    assert sorted((c["rank"], c["name"]) for c in run["checks"]) == sorted(
        (r, n) for r in range(world) for n in names)
    assert all(c["passed"] and c["max_abs_err"] == 0 for c in run["checks"]), run["checks"]

    want = plain_sum(world, size)
    assert not [e for e in got if e["kind"] == "collective"], "the reference is one process's sum, not a collective"
    for rank in range(world):
        [check] = of_rank(got, rank, "check", name=names[0])
        assert check["tensors"][1]["preview"] == [want]      # the reference the lesson compared with
        # what the page shows last for each algorithm: the whole sum, on every rank
        if "ring all-reduce" in names:
            last = of_rank(got, rank, "tensor", name=f"ring buffer after all-gather step {world - 1}")
            assert [e["tensor"]["preview"] for e in last] == [[want]]
        if "recursive doubling all-reduce" in names:
            last = of_rank(got, rank, "tensor", name=f"doubling buffer after step {int(math.log2(world))}")
            assert [e["tensor"]["preview"] for e in last] == [[want]]


def test_the_ring_reduce_scatter_leaves_rank_r_with_the_sum_of_chunk_r_plus_1(finished):
    """At 4 ranks, 2 elements each: after p−1 reduce-scatter steps rank r holds the full sum of chunk
    (r+1) mod p (its other chunks are partial sums)."""
    got = finished["4-both"]["events"]
    want = plain_sum(4, 8)
    for rank in range(4):
        [shown] = of_rank(got, rank, "tensor", name="ring buffer after reduce-scatter step 3")
        chunk = (rank + 1) % 4
        assert shown["tensor"]["preview"][0][2 * chunk:2 * chunk + 2] == want[2 * chunk:2 * chunk + 2]


@pytest.mark.parametrize("case", [c for c in CASES if c[1].get("algorithm") == "ring"], ids=case_id)
def test_the_ring_is_2_p_minus_1_sends_and_recvs_to_the_neighbours(finished, case):
    world, params = case
    got = finished[case_id(case)]["events"]
    chunk_bytes = 4 * params["size"] // world
    for rank in range(world):
        sends = of_rank(got, rank, "p2p", phase="begin", op="send")
        recvs = of_rank(got, rank, "p2p", phase="begin", op="recv")
        assert len(sends) == len(recvs) == 2 * (world - 1), rank
        assert {e["peer"] for e in sends} == {(rank + 1) % world}
        assert {e["peer"] for e in recvs} == {(rank - 1) % world}
        assert {e["bytes"] for e in sends + recvs} == {chunk_bytes}
        assert [e["label"].split(":")[0] for e in sends] == \
               [f"reduce-scatter step {s}" for s in range(1, world)] + [f"all-gather step {s}" for s in range(1, world)]
        # every call ended, and there is no collective
        assert len(of_rank(got, rank, "p2p", phase="end")) == 4 * (world - 1)
        assert of_rank(got, rank, "collective", phase="begin") == []


@pytest.mark.parametrize("case", [c for c in CASES if not c[1]], ids=case_id)
def test_with_both_the_ring_part_still_takes_2_p_minus_1_steps(finished, case):
    world, _ = case
    got = finished[case_id(case)]["events"]
    for rank in range(world):
        for op in ("send", "recv"):
            ring = [e for e in of_rank(got, rank, "p2p", phase="begin", op=op) if e["label"].startswith(RING_LABELS)]
            assert len(ring) == 2 * (world - 1), (rank, op)
            doubling = [e for e in of_rank(got, rank, "p2p", phase="begin", op=op) if e["label"].startswith("doubling")]
            assert len(doubling) == (int(math.log2(world)) if world & (world - 1) == 0 else 0)


@pytest.mark.parametrize("case", [c for c in CASES if c[1].get("algorithm") == "recursive_doubling"], ids=case_id)
def test_recursive_doubling_swaps_the_whole_tensor_log2_p_times(finished, case):
    world, _ = case
    got = finished[case_id(case)]["events"]
    steps = int(math.log2(world))
    for rank in range(world):
        partners = [rank ^ (1 << k) for k in range(steps)]
        sends = of_rank(got, rank, "p2p", phase="begin", op="send")
        recvs = of_rank(got, rank, "p2p", phase="begin", op="recv")
        assert [e["peer"] for e in sends] == [e["peer"] for e in recvs] == partners
        assert {e["bytes"] for e in sends + recvs} == {4 * 2 * world}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_step_metrics_count_rank_0s_sends_for_each_algorithm_that_ran(finished, case):
    world, params = case
    run, got = finished[case_id(case)]["run"], finished[case_id(case)]["events"]
    algorithm = params.get("algorithm", "both")
    size = params.get("size") or 2 * world
    metrics = {m["name"]: m for m in run["metrics"]}
    assert {m["rank"] for m in run["metrics"]} == {0}
    ran = {"steps_ring": algorithm in ("both", "ring"),
           "steps_recursive_doubling": algorithm == "recursive_doubling"
           or (algorithm == "both" and world & (world - 1) == 0)}
    assert set(metrics) == {name for name, did in ran.items() if did}
    sends = of_rank(got, 0, "p2p", phase="begin", op="send")
    for name, labels, steps, formula, elements in (
            ("steps_ring", RING_LABELS, 2 * (world - 1), "2(p−1)", 2 * (world - 1) * size // world),
            ("steps_recursive_doubling", ("doubling",), int(math.log2(world)), "log₂p", int(math.log2(world)) * size)):
        if not ran[name]:
            continue
        mine = [e for e in sends if e["label"].startswith(labels)]
        m = metrics[name]
        assert m["value"] == len(mine) == m["expected"] == steps, (name, m)
        assert m["elements_sent"] == sum(e["bytes"] for e in mine) // 4 == m["elements_expected"] == elements
        assert m["formula"] == formula


@pytest.mark.parametrize("world", [3, 5, 6, 12])
def test_recursive_doubling_needs_a_power_of_two(server, world):
    before = run_count(server)
    response = web.post(f"{server.url}/api/runs", json={"lesson": "ring_allreduce", "world_size": world,
                                                          "params": {"algorithm": "recursive_doubling"}})
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "params", "algorithm"]
    assert "power-of-two" in error["msg"] and f"not {world}" in error["msg"]
    assert run_count(server) == before


def test_a_size_the_ring_cannot_cut_is_refused(server):
    before = run_count(server)
    response = web.post(f"{server.url}/api/runs", json={"lesson": "ring_allreduce", "world_size": 4,
                                                          "params": {"size": 10}})
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "params", "size"] and "divisible" in error["msg"]
    assert run_count(server) == before
