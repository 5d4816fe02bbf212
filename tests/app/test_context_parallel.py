"""Context parallelism on real ranks: ring attention (zig-zag and contiguous) and Ulysses match one
process at every world size; averaging the blocks fails exactly where a query sees several blocks; the
metrics are what the events say was sent and computed."""

from __future__ import annotations

import pytest

from tests import web
from tests.app.helpers import run_all

RUNS = {
    "ring zig-zag at 2": (2, {}), "ring zig-zag at 4": (4, {}), "ring zig-zag at 8": (8, {}),
    "ring contiguous at 4": (4, {"load_balance": False}), "ring full at 3": (3, {"causal": False, "seq_len": 12}),
    "ulysses at 2": (2, {"method": "ulysses"}), "ulysses at 4": (4, {"method": "ulysses"}),
    "ulysses at 8": (8, {"method": "ulysses", "heads": 8}),
    "mistake": (4, {"mistake": "average_blocks", "load_balance": False}),
}


@pytest.fixture(scope="module")
def finished(server):
    specs = [("context_parallel", world, params) for world, params in RUNS.values()]
    return dict(zip(RUNS, run_all(server, specs, in_flight=3, timeout=240)))


def _of(events, kind, **match):
    return [e for e in events if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


def _metric(events, name, rank):
    return next(e for e in _of(events, "metric", name=name, rank=rank))


@pytest.mark.parametrize("name", [n for n in RUNS if n != "mistake"])
def test_every_check_passes(finished, name):
    result = finished[name]
    assert result["run"]["status"] == "done", result["run"].get("error")
    checks = _of(result["events"], "check")
    world = RUNS[name][0]
    assert len(checks) == 4 * world and all(c["passed"] for c in checks), [c for c in checks if not c["passed"]]


def test_averaging_the_blocks_fails_where_a_query_sees_more_than_one(finished):
    events = finished["mistake"]["events"]
    blocks = {r: len(_of(events, "compute", rank=r, phase="begin")) - 1 for r in range(4)}   # minus "backward"
    assert blocks == {0: 1, 1: 2, 2: 3, 3: 4}                      # contiguous and causal: rank r sees r + 1
    failed = {(c["name"], c["rank"]) for c in _of(events, "check") if not c["passed"]}
    assert {name for name, _ in failed} == {"output", "dQ", "dK", "dV"}
    assert {rank for name, rank in failed if name == "output"} == {1, 2, 3}   # rank 0 merges nothing


def test_the_ring_metrics_are_what_was_sent_and_computed(finished):
    for name in ("ring zig-zag at 4", "ring contiguous at 4", "ring full at 3"):
        events, (world, params) = finished[name]["events"], RUNS[name]
        seq_len = params.get("seq_len", 16)
        pairs = {}
        for r in range(world):
            sends = _of(events, "p2p", rank=r, op="send", phase="begin")
            forward = sum(e["bytes"] for e in sends if e["label"].startswith("ring step"))
            backward = sum(e["bytes"] for e in sends if e["label"].startswith("backward ring"))
            kv_total = 2 * seq_len * 4 * 4 * 4                              # K and V: S × h × d float32 each
            assert _metric(events, "kv_bytes_sent", r)["value"] == forward == (world - 1) / world * kv_total
            assert _metric(events, "dkv_bytes_sent", r)["value"] == backward == kv_total
            snapshots = _of(events, "tensor", rank=r, name="attention pairs computed (step + 1)")
            pairs[r] = sum(v != 0 for s in snapshots for row in s["tensor"]["preview"] for v in row) * 4
            assert _metric(events, "attention_pairs", r)["value"] == pairs[r]
            steps = {v for s in snapshots for row in s["tensor"]["preview"] for v in row if v}
            assert _metric(events, "idle_steps", r)["value"] == world - len(steps)
        causal = params.get("causal", True)
        total = (seq_len * (seq_len + 1) // 2 if causal else seq_len ** 2) * 4
        assert sum(pairs.values()) == total
        balanced = params.get("load_balance", True) or not causal
        assert (len(set(pairs.values())) == 1) == balanced, pairs


def test_ulysses_sends_what_its_all_to_alls_carry(finished):
    events, world = finished["ulysses at 4"]["events"], 4
    for r in range(world):
        calls = _of(events, "collective", rank=r, op="all_to_all", phase="begin")
        assert len(calls) == 8                                           # Q, K, V, O; forward and backward
        sent = sum(e["bytes"] * (world - 1) // world for e in calls)   # its own part stays home
        assert _metric(events, "all_to_all_bytes_sent", r)["value"] == sent == 8 * (world - 1) / world * 4 * 4 * 4 * 4


@pytest.mark.parametrize("world, params, field, words", [
    (4, {"seq_len": 12}, "seq_len", "divisible by 2 × ranks = 8"),
    (4, {"method": "ulysses", "heads": 6}, "heads", "heads/p whole heads"),
    (2, {"method": "ulysses", "mistake": "average_blocks"}, "mistake", "choose method=ring"),
])
def test_a_split_that_cannot_work_is_refused_naming_the_field(server, world, params, field, words):
    response = web.post(f"{server.url}/api/runs", json={"lesson": "context_parallel", "world_size": world, "params": params})
    assert response.status_code == 422
    detail = response.json()["detail"][0]
    assert detail["loc"][-1] == field and words in detail["msg"], detail
