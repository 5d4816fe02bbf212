"""Lesson `tp_attention` on the live server: attention split by heads at t = 1, 2 and 8 ranks —
multi-head (as many KV heads as query heads), GQA with KV heads to split (n_kv ≥ t) and GQA with
fewer KV heads than ranks (each replicated on t/n_kv ranks) — gives the single-process output and
gradients; the KV cache is counted and drawn once per replica; the replicas, and only they, sum their
KV gradients; and head counts that cannot be split are refused naming the rule."""

from __future__ import annotations


import pytest

from tests import web
from tests.app.helpers import of_rank, run_all, run_count

HEAD_DIM = 4                                                       # the lesson's default

# (t, heads, kv_heads). No t = 4: its kinds of split are all here — several KV heads per rank (2, 8, 8),
# one per rank (8, 8, 8), replicas in groups smaller than the world (8, 8, 4 and 8, 8, 2), every rank
# one group of replicas (2, 8, 1).
CASES = [
    (1, 8, 2),
    (2, 8, 8), (2, 8, 1),
    (8, 8, 8), (8, 8, 4), (8, 8, 2),
]


def key(case) -> str:
    t, heads, kv = case
    return f"t={t}-heads={heads}-kv={kv}"


@pytest.fixture(scope="module")
def finished(server) -> dict[str, dict]:
    results = run_all(server, [("tp_attention", t, {"heads": heads, "kv_heads": kv}) for t, heads, kv in CASES])
    return {key(case): result for case, result in zip(CASES, results)}


def kv_heads_of(rank: int, t: int, heads: int, kv: int) -> list[int]:
    """The KV heads rank `rank`'s query heads read: query head q uses KV head q // (heads / kv)."""
    queries = range(rank * heads // t, (rank + 1) * heads // t)
    return sorted({q // (heads // kv) for q in queries})


def replicas_of(rank: int, t: int, heads: int, kv: int) -> list[int]:
    """The ranks holding the same KV heads as `rank`."""
    return [r for r in range(t) if kv_heads_of(r, t, heads, kv) == kv_heads_of(rank, t, heads, kv)]


@pytest.mark.parametrize("case", CASES, ids=key)
def test_output_and_gradients_equal_one_process(finished, case):
    t, heads, kv = case
    run = finished[key(case)]["run"]
    assert run["status"] == "done", run["error"]
    names = ["output Y", "input gradient dX", "Wq shard gradient", "Wk shard gradient", "Wv shard gradient",
             "Wo shard gradient"]
    assert sorted((c["rank"], c["name"]) for c in run["checks"]) == sorted((r, n) for r in range(t) for n in names)
    assert all(c["passed"] for c in run["checks"]), [c for c in run["checks"] if not c["passed"]]


@pytest.mark.parametrize("case", CASES, ids=key)
def test_kv_cache_copies(finished, case):
    t, heads, kv = case
    run, got = finished[key(case)]["run"], finished[key(case)]["events"]
    [metric] = [m for m in run["metrics"] if m["name"] == "kv_cache_copies"]
    assert metric["rank"] == 0
    assert metric["value"] == metric["expected"] == (t // kv if kv < t else 1)
    # the page draws each rank's K cache shard where it sits in the whole cache: replicas on top of each other
    offsets = {}
    for rank in range(t):
        [cache] = of_rank(got, rank, "tensor", name="K cache")
        place = cache["place"]
        assert place["full_shape"] == [8, kv * HEAD_DIM]                # seq_len 8
        mine = kv_heads_of(rank, t, heads, kv)
        assert place["offset"] == [0, mine[0] * HEAD_DIM]
        assert cache["tensor"]["shape"] == [8, len(mine) * HEAD_DIM]
        offsets.setdefault(tuple(place["offset"]), []).append(rank)
    assert len(offsets) == min(kv, t)
    assert {len(ranks) for ranks in offsets.values()} == {metric["value"]}


@pytest.mark.parametrize("case", CASES, ids=key)
def test_replicas_and_only_they_sum_their_kv_gradients(finished, case):
    t, heads, kv = case
    got = finished[key(case)]["events"]
    hidden = heads * HEAD_DIM
    for rank in range(t):
        begins = of_rank(got, rank, "collective", phase="begin")
        replicated = [e for e in begins if "replicated" in e.get("label", "")]
        if kv >= t:
            assert replicated == []
        else:
            members = replicas_of(rank, t, heads, kv)
            assert len(members) == t // kv
            assert [e["label"] for e in replicated] == ["sum the replicated K head's gradient",
                                                        "sum the replicated V head's gradient"]
            for event in replicated:
                assert (event["op"], event["ranks"], event["bytes"]) == ("all_reduce", members, 4 * HEAD_DIM * hidden)
                assert event["group"] != "tp"
            # a group of its own: its all-reduces are counted apart from tensor parallelism's
            assert [e["cseq"] for e in replicated] == [1, 2]
        # everything else is the tensor-parallel pair f and g, over every rank
        others = [e for e in begins if e not in replicated]
        assert sorted(e["label"] for e in others) == ["f backward: sum the input gradients",
                                                      "g forward: sum the partial outputs"]
        assert all(e["group"] == "tp" and e["ranks"] == list(range(t)) for e in others)


def refused(server, world: int, params: dict) -> dict:
    before = run_count(server)
    response = web.post(f"{server.url}/api/runs",
                        json={"lesson": "tp_attention", "world_size": world, "params": params})
    assert response.status_code == 422, response.text
    assert run_count(server) == before                                   # nothing started
    return {tuple(e["loc"]): e["msg"] for e in response.json()["detail"]}


@pytest.mark.parametrize("world,params,field,words", [
    (4, {"heads": 6, "kv_heads": 2}, "heads", ["heads=6", "divisible", "t=4"]),
    (8, {"heads": 12, "kv_heads": 4}, "heads", ["heads=12", "t=8"]),
    (2, {"heads": 8, "kv_heads": 3}, "kv_heads", ["kv_heads=3", "must divide heads=8"]),
    (4, {"heads": 12, "kv_heads": 3}, "kv_heads", ["replicated", "kv_heads=3 must divide t=4"]),
    (8, {"heads": 12, "kv_heads": 3}, "heads", ["heads=12"]),
    (4, {"heads": 12, "kv_heads": 6}, "kv_heads", ["kv_heads=6 must be divisible by t=4"]),
], ids=["heads-6-t4", "heads-12-t8", "kv-3-heads-8", "kv-3-t4", "heads-12-kv-3-t8", "kv-6-t4"])
def test_heads_that_cannot_be_split_are_refused(server, world, params, field, words):
    errors = refused(server, world, params)
    assert ("body", "params", field) in errors, errors
    for word in words:
        assert word in errors[("body", "params", field)]
