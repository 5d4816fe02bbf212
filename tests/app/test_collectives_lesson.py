"""Lesson `collectives` on the live server: every op, at 2, 3 and 8 ranks (and at 4 with other sizes and
roots), gives what a plain computation from the known inputs says — read from each rank's "after"
tensor as the page shows it, not only from the lesson's own check, which only the ranks that receive a
result get (a barrier's check is that no rank left before the last arrived); the `origin` of each
element; the traced call itself with its size, duration and bandwidths; the α–β sweep (its fit redone
from the samples in the log, with its standard errors, r² and warnings; send/recv timed as round
trips; a barrier as a latency only); and bad parameters refused with nothing started.

Rank r starts with arange(size) + base·r (base 10 when size ≤ 10, else 100); size defaults to 2·world.
"""

from __future__ import annotations

import math

import httpx
import numpy as np
import pytest

from tests import web
from tests.app.helpers import run_all, run_count
from workers.cost_model import predict

# Every op at the smallest world, an odd one and the largest; 4 ranks add no path of their own (a power of
# two, like 2 and 8), so the 4-rank cases below are the ones that differ in size or root.
WORLDS = (2, 3, 8)
OPS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
       "scatter", "gather", "send_recv", "barrier")
ROOTED = ("broadcast", "reduce", "scatter", "gather")


def _cases() -> list[tuple[int, dict]]:
    cases = []
    for world in WORLDS:
        for op in OPS:   # rooted ops at the last rank: a root other than 0 is the interesting one
            cases.append((world, {"op": op, **({"root": world - 1} if op in ROOTED else {})}))
        for reduce_op in ("avg", "max"):
            cases.append((world, {"op": "all_reduce", "reduce_op": reduce_op}))
            if world in (3, 8):
                cases.append((world, {"op": "reduce", "reduce_op": reduce_op, "root": 1}))
    cases += [(3, {"op": op, "root": 0}) for op in ROOTED]
    cases += [(3, {"op": op, "root": 1}) for op in ("broadcast", "gather")]
    # longer tensors: base 100, and previews of more than 32 values that the page block-averages
    cases += [(4, {"op": op, "size": 12}) for op in ("all_gather", "reduce_scatter", "all_to_all", "scatter")]
    cases += [(8, {"op": "gather", "root": 5, "size": 40}), (2, {"op": "all_reduce", "reduce_op": "max", "size": 100})]
    # sizes that need not divide for ops that do not split the tensor
    cases += [(3, {"op": "all_reduce", "size": 5}), (4, {"op": "gather", "size": 5}),
              (4, {"op": "broadcast", "root": 2, "size": 7}), (3, {"op": "send_recv", "size": 1})]
    return cases


CASES = _cases()
SWEEPS = [(2, {"op": "all_reduce", "sweep": True}), (4, {"op": "all_gather", "sweep": True}),
          (3, {"op": "gather", "sweep": True}), (3, {"op": "barrier", "sweep": True}),
          (2, {"op": "send_recv", "sweep": True})]
SWEEP_SIZES, REPEATS = [4 << k for k in range(0, 19, 3)], 5          # 4 B … 1 MiB, each timed 5 times


def case_id(case) -> str:
    world, params = case
    return f"{world}-" + "-".join(f"{v}" if k == "op" else f"{k}={v}" for k, v in params.items())


@pytest.fixture(scope="module")
def finished(server) -> dict[str, dict]:
    """Every case and sweep, run once for the whole module."""
    every = CASES + SWEEPS
    results = run_all(server, [("collectives", world, params) for world, params in every])
    return {case_id(case): result for case, result in zip(every, results)}


# ---- the plain computation -----------------------------------------------------------------------

def inputs(world: int, size: int) -> np.ndarray:
    """Row r: rank r's tensor before the call."""
    base = 10 if size <= 10 else 100
    return np.arange(size, dtype=np.float64)[None, :] + base * np.arange(world, dtype=np.float64)[:, None]


def reduced(x: np.ndarray, how: str) -> np.ndarray:
    return {"sum": x.sum(0), "avg": x.mean(0), "max": x.max(0)}[how]


def plain(op: str, rank: int, x: np.ndarray, root: int, how: str) -> np.ndarray:
    world, size = x.shape
    if op == "broadcast":
        return x[root]
    if op == "reduce":
        return reduced(x, how) if rank == root else x[rank]
    if op == "all_reduce":
        return reduced(x, how)
    if op == "all_gather":
        return x.reshape(-1)
    if op == "reduce_scatter":
        return x.sum(0).reshape(world, -1)[rank]
    if op == "all_to_all":          # chunk `rank` of every rank, in rank order
        return x.reshape(world, world, -1)[:, rank, :].reshape(-1)
    if op == "scatter":
        return x[root].reshape(world, -1)[rank]
    if op == "gather":
        return x.reshape(-1) if rank == root else x[rank]
    if op == "send_recv":            # even ranks send to their right neighbour
        return x[rank - 1] if rank % 2 else x[rank]
    assert op == "barrier"
    return x[rank]


def holds_result(op: str, rank: int, root: int) -> bool:
    """Non-roots of reduce and gather only send (their tensor is their untouched input); so do the
    even ranks of send_recv (or they sit out)."""
    if op in ("reduce", "gather"):
        return rank == root
    return rank % 2 == 1 if op == "send_recv" else True


def plain_origin(op: str, rank: int, world: int, size: int, root: int) -> list[list[int]]:
    everyone = list(range(world))
    chunk = size // world
    if op in ("all_reduce", "reduce_scatter") or (op == "reduce" and rank == root):
        return [everyone] * (chunk if op == "reduce_scatter" else size)
    if op == "broadcast":
        return [[root]] * size
    if op == "scatter":
        return [[root]] * chunk
    if op == "all_gather" or (op == "gather" and rank == root):
        return [[r] for r in everyone for _ in range(size)]
    if op == "all_to_all":
        return [[r] for r in everyone for _ in range(chunk)]
    if op == "send_recv" and rank % 2:
        return [[rank - 1]] * size
    return [[rank]] * size


def block_average(values: np.ndarray, side: int = 32) -> np.ndarray:
    """What the page gets for a 1-D tensor of more than `side` values: adaptive average pooling."""
    n = len(values)
    if n <= side:
        return values
    return np.array([values[(i * n) // side:-(-((i + 1) * n) // side)].mean() for i in range(side)])


def after_values(server, run_id: str, event: dict) -> np.ndarray:
    """A rank's "after" tensor as the page has it: the preview when exact, else the full tensor."""
    tensor = event["tensor"]
    if tensor["exact"]:
        return np.array(tensor["preview"][0], dtype=np.float64)
    full = web.get(f"{server.url}/api/runs/{run_id}/tensors/{tensor['id']}")
    assert full.status_code == 200, full.text
    return np.array(full.json()["values"], dtype=np.float64)


def by_rank(got: list[dict], kind: str, **match) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for e in got:
        if e["kind"] == kind and all(e.get(k) == v for k, v in match.items()):
            out.setdefault(e["rank"], []).append(e)
    return out


# ---- results -------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_rank_ends_with_the_plain_result(server, finished, case):
    world, params = case
    result = finished[case_id(case)]
    run, got = result["run"], result["events"]
    assert run["status"] == "done", run["error"]
    op, root, how = params["op"], params.get("root", 0), params.get("reduce_op", "sum")
    size = params.get("size") or 2 * world
    assert run["params"] == {"op": op, "reduce_op": how, "root": root, "size": params.get("size"), "sweep": False}

    checks = {c["rank"]: c for c in run["checks"]}
    if op == "barrier":                                  # no data: checked as the order of arrivals and exits
        assert sorted(checks) == list(range(world))
        assert all(c["passed"] and c["name"] == "barrier: left after the last rank arrived" for c in checks.values())
        spans = by_rank(got, "collective")
        last_arrival = max(e["t"] for r in spans for e in spans[r] if e["phase"] == "begin")
        assert all(e["t"] >= last_arrival for r in spans for e in spans[r] if e["phase"] == "end")
    else:                                                # a check where a rank holds a result, and only there
        assert sorted(checks) == [r for r in range(world) if holds_result(op, r, root)], checks
        assert all(c["passed"] and c["name"] == op for c in checks.values()), checks

    x = inputs(world, size)
    before = by_rank(got, "tensor", name="before")
    after = by_rank(got, "tensor", name="after")
    assert sorted(after) == list(range(world))
    for rank in range(world):
        [start], [end] = before[rank], after[rank]
        assert start["tensor"]["preview"][0] == pytest.approx(block_average(x[rank]).tolist(), rel=1e-3)
        want = plain(op, rank, x, root, how)
        assert end["tensor"]["shape"] == [len(want)], (rank, end["tensor"])
        assert after_values(server, run["id"], end) == pytest.approx(want.tolist(), rel=1e-6), rank
        # the preview the page draws: the values, or their block averages past 32
        assert end["tensor"]["preview"][0] == pytest.approx(block_average(want).tolist(), rel=1e-3), rank
        assert end["tensor"]["exact"] == (len(want) <= 32)
        stats = end["tensor"]["stats"]
        assert (stats["min"], stats["max"]) == pytest.approx((want.min(), want.max()))
        assert stats["mean"] == pytest.approx(want.mean(), rel=1e-5)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_element_names_the_ranks_it_came_from(finished, case):
    world, params = case
    got = finished[case_id(case)]["events"]
    op, root = params["op"], params.get("root", 0)
    size = params.get("size") or 2 * world
    after = by_rank(got, "tensor", name="after")
    for rank in range(world):
        [end] = after[rank]
        assert end["origin"] == plain_origin(op, rank, world, size, root), rank
        assert len(end["origin"]) == end["tensor"]["shape"][0]


def test_origin_examples(finished):
    """Spelled out for three ranks, root 1."""
    after = by_rank(finished["3-broadcast-root=1"]["events"], "tensor", name="after")
    assert [after[r][0]["origin"] for r in range(3)] == [[[1]] * 6] * 3
    after = by_rank(finished["3-gather-root=1"]["events"], "tensor", name="after")
    assert after[1][0]["origin"] == [[0]] * 6 + [[1]] * 6 + [[2]] * 6
    assert after[0][0]["origin"] == [[0]] * 6 and after[2][0]["origin"] == [[2]] * 6
    after = by_rank(finished["3-reduce_scatter"]["events"], "tensor", name="after")
    assert after[2][0]["origin"] == [[0, 1, 2]] * 2
    after = by_rank(finished["4-all_to_all-size=12"]["events"], "tensor", name="after")
    assert after[3][0]["origin"] == [[0]] * 3 + [[1]] * 3 + [[2]] * 3 + [[3]] * 3
    assert after[3][0]["tensor"]["preview"] == [[9, 10, 11, 109, 110, 111, 209, 210, 211, 309, 310, 311]]
    after = by_rank(finished["3-send_recv"]["events"], "tensor", name="after")
    assert [after[r][0]["origin"][0] for r in range(3)] == [[0], [0], [2]]


# ---- the traced call -----------------------------------------------------------------------------

BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
              "scatter": lambda n: (n - 1) / n, "gather": lambda n: (n - 1) / n,
              "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "send": lambda n: 1.0, "recv": lambda n: 1.0}


def nccl_tests_size(op: str, world: int, size: int) -> int:
    """nccl-tests' "size" in bytes (float32): the whole tensor the collective is about — the gathered
    output of all_gather and gather, the full input of reduce_scatter and scatter."""
    if op == "barrier":
        return 0
    return 4 * size * (world if op in ("all_gather", "gather") else 1)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_call_is_traced_once_with_its_size_and_bandwidth(finished, case):
    world, params = case
    got = finished[case_id(case)]["events"]
    op, root = params["op"], params.get("root", 0)
    size = params.get("size") or 2 * world
    kind = "p2p" if op == "send_recv" else "collective"
    begins, ends = by_rank(got, kind, phase="begin"), by_rank(got, kind, phase="end")
    if op == "send_recv":
        pairs = [(r, r + 1) for r in range(0, world - 1, 2)]
        assert sorted(begins) == sorted(r for pair in pairs for r in pair)
        for sender, receiver in pairs:
            assert [(e["op"], e["peer"]) for e in begins[sender]] == [("send", receiver)]
            assert [(e["op"], e["peer"]) for e in begins[receiver]] == [("recv", sender)]
    else:
        assert sorted(begins) == sorted(ends) == list(range(world))
    assert not by_rank(got, "collective" if kind == "p2p" else "p2p")
    for rank in begins:
        [begin], [end] = begins[rank], ends[rank]
        name = begin["op"]
        assert end["op"] == name and (kind == "p2p" or name == op)
        assert end["duration"] == pytest.approx(end["t"] - end["t_call"], abs=2e-6)   # the call alone
        assert begin["t"] <= end["t_call"] + 1e-6
        assert end["duration"] >= 0
        want_bytes = 4 * size if kind == "p2p" else nccl_tests_size(op, world, size)
        assert (begin["bytes"], end["bytes"]) == (want_bytes, want_bytes), (rank, name)
        if kind == "collective":
            assert begin["cseq"] == end["cseq"] == 1 and begin["group"] == "world"
            assert begin["ranks"] == list(range(world))
        if op in ROOTED:
            assert begin["root"] == root
        if op in ("all_reduce", "reduce"):   # gloo has no avg: it is a sum, then a division
            assert begin["reduce_op"] == ("max" if params.get("reduce_op") == "max" else "sum")
        if want_bytes and end["duration"] > 0:
            assert end["algbw"] == pytest.approx(want_bytes / end["duration"], rel=1e-9)
            assert end["busbw"] == pytest.approx(end["algbw"] * BUS_FACTOR[name](world), rel=1e-9)
        else:
            assert "algbw" not in end and "busbw" not in end


def test_every_case_had_its_own_run(finished):
    assert len({r["run"]["id"] for r in finished.values()}) == len(CASES) + len(SWEEPS)
    assert {r["run"]["status"] for r in finished.values()} == {"done"}


# ---- the sweep -------------------------------------------------------------------------------------

def samples(metrics: list[dict], series: str) -> dict[int, list[float]]:
    """The sweep's raw timings of one series, by size: the log holds every repeat."""
    out: dict[int, list[float]] = {}
    for m in metrics:
        if m["name"] == "cost_sample" and m["series"] == series:
            out.setdefault(m["bytes"], []).append(m["value"])
    return out


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def refit(metrics: list[dict]) -> dict:
    """α and β again, from the ping-pong samples in the log: half the median round trip of each size,
    a least-squares line through them, its standard errors and r² (numpy, not the lesson's code)."""
    round_trips = samples(metrics, "ping_pong")
    sizes = np.array(sorted(round_trips), dtype=float)
    one_way = np.array([median(round_trips[int(m)]) / 2 for m in sizes])
    (slope, intercept), cov = np.polyfit(sizes, one_way, 1, cov=True)
    residual = one_way - (intercept + slope * sizes)
    r2 = 1 - (residual ** 2).sum() / ((one_way - one_way.mean()) ** 2).sum()
    beta = max(slope, 0.0)
    alpha = max(one_way.mean() - beta * sizes.mean(), 0.0)
    return {"alpha": alpha, "beta": beta, "alpha_stderr": np.sqrt(cov[1, 1]), "beta_stderr": np.sqrt(cov[0, 0]),
            "r2": r2, "clamped": [n for n, raw in (("beta", slope), ("alpha", one_way.mean() - beta * sizes.mean()))
                                  if raw < 0]}


@pytest.mark.parametrize("case", SWEEPS, ids=case_id)
def test_the_sweep_times_the_collective_against_the_alpha_beta_model(finished, case):
    world, params = case
    run, got = finished[case_id(case)]["run"], finished[case_id(case)]["events"]
    assert run["status"] == "done", run["error"]
    assert all(c["passed"] for c in run["checks"])
    assert sorted(c["rank"] for c in run["checks"]) == \
        [r for r in range(world) if params["op"] == "barrier" or holds_result(params["op"], r, params.get("root", 0))]
    metrics = run["metrics"]
    assert {m["rank"] for m in metrics} == {0}
    named = {m["name"]: m for m in metrics if m["name"] not in ("cost_sweep", "cost_sample")}
    alpha, beta = named["alpha"]["value"], named["beta"]["value"]
    assert (named["alpha"]["unit"], named["beta"]["unit"]) == ("s", "s/B")
    assert alpha >= 0 and beta >= 0 and alpha + beta > 0

    # the fit, redone from the samples in the log, with how far to trust it
    pings = samples(metrics, "ping_pong")
    assert sorted(pings) == SWEEP_SIZES and all(len(t) == REPEATS for t in pings.values())
    again = refit(metrics)
    assert (alpha, beta) == pytest.approx((again["alpha"], again["beta"]), rel=1e-6, abs=1e-15)
    assert named["alpha"]["stderr"] == pytest.approx(again["alpha_stderr"], rel=1e-4)
    assert named["beta"]["stderr"] == pytest.approx(again["beta_stderr"], rel=1e-4)
    for name in ("alpha", "beta"):
        m = named[name]
        assert m["r2"] == pytest.approx(again["r2"], rel=1e-6, abs=1e-9) and m["clamped"] == again["clamped"]
        assert any(w.startswith("poor fit: r² = ") for w in m["warnings"]) == (again["r2"] < 0.9), m
        assert [w for w in m["warnings"] if "clamped" in w] == \
            [f"{g} clamped to 0: the best line gives {g} < 0" for g in ("β", "α") if
             {"β": "beta", "α": "alpha"}[g] in again["clamped"]]

    op = params["op"]
    sweep = [m for m in metrics if m["name"] == "cost_sweep"]
    if op == "barrier":                                     # no data moved: a latency, no sizes or bandwidths
        assert sweep == [] and samples(metrics, "barrier").keys() == {0}
        latency = named["barrier_latency"]
        assert latency["value"] == median(samples(metrics, "barrier")[0])
        assert latency["expected"] == pytest.approx(math.ceil(math.log2(world)) * alpha, rel=1e-9)
        assert "⌈log₂p⌉·α" in latency["formula"]
        assert len([e for e in got if e["kind"] == "collective"]) == 2 * world
        return
    assert len(sweep) == 7
    sizes = [m["bytes"] for m in sweep]
    if op == "send_recv":                                   # round trips between ranks 0 and 1: two messages each
        assert sizes == SWEEP_SIZES
        for m in sweep:
            assert m["round_trip"] is True and m["value"] == median(pings[m["bytes"]])
            assert m["predicted"] == pytest.approx(2 * (alpha + m["bytes"] * beta), rel=1e-9)
            assert m["algbw"] == pytest.approx(2 * m["bytes"] / m["value"], rel=1e-9)
        assert len([e for e in got if e["kind"] == "p2p"]) == 2 * 2 * (world // 2)
        return
    elements = (1 << 18) // world * world                   # 1 MiB of float32, cut to a multiple of the ranks
    assert sizes == sorted(sizes) and sizes[-1] == 4 * elements * (world if op in ("all_gather", "gather") else 1)
    timed = samples(metrics, op)
    assert sorted(timed) == sizes
    for m in sweep:
        assert m["unit"] == "s" and m["value"] > 0 and "round_trip" not in m
        assert m["value"] == median(timed[m["bytes"]])     # the median repeat, each timed on its slowest rank
        assert m["algbw"] == pytest.approx(m["bytes"] / m["value"], rel=1e-9)
        assert m["busbw"] == pytest.approx(m["algbw"] * BUS_FACTOR[op](world), rel=1e-9)
        assert m["predicted"] == pytest.approx(predict(op, world, m["bytes"], alpha, beta), rel=1e-9)
    # thousands of timed calls, none of them traced: still one collective per rank
    assert len([e for e in got if e["kind"] == "collective"]) == 2 * world
    assert not [e for e in got if e["kind"] == "p2p"]


# ---- bad input -------------------------------------------------------------------------------------

def post(server, world: int, params: dict) -> httpx.Response:
    return web.post(f"{server.url}/api/runs", json={"lesson": "collectives", "world_size": world, "params": params})


@pytest.mark.parametrize("op, world, size", [("reduce_scatter", 4, 6), ("all_to_all", 3, 4), ("scatter", 8, 12),
                                             ("reduce_scatter", 2, 1), ("scatter", 16, 4001)])
def test_a_size_that_does_not_divide_is_refused(server, op, world, size):
    before = run_count(server)
    response = post(server, world, {"op": op, "size": size})
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    assert error["loc"][-1] == "size" and error["loc"][:2] == ["body", "params"]
    assert "divisible" in error["msg"] and f"({world})" in error["msg"]
    assert run_count(server) == before


@pytest.mark.parametrize("world, root", [(2, 2), (4, 4), (3, 7), (8, 50)])
def test_a_root_that_is_not_a_rank_is_refused(server, world, root):
    before = run_count(server)
    response = post(server, world, {"op": "broadcast", "root": root})
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "params", "root"]
    assert f"root={root}" in error["msg"]
    assert run_count(server) == before


@pytest.mark.parametrize("world", [1, 17, 0, -2])
def test_a_world_size_outside_2_to_16_is_refused(server, world):
    before = run_count(server)
    response = post(server, world, {"op": "all_reduce"})
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "world_size"]
    assert f"world_size {world}" in error["msg"]
    assert run_count(server) == before


@pytest.mark.parametrize("params, field", [({"op": "all_gatherr"}, "op"), ({"reduce_op": "min"}, "reduce_op"),
                                           ({"size": 0}, "size"), ({"size": 5000}, "size"), ({"root": -1}, "root")])
def test_other_bad_parameters_name_their_field(server, params, field):
    before = run_count(server)
    response = post(server, 4, params)
    assert response.status_code == 422, response.text
    assert [e["loc"] for e in response.json()["detail"]] == [["body", "params", field]]
    assert run_count(server) == before
