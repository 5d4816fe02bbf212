"""Lesson `three_d` on the live server: TP × PP × DP factorisations of 8, 4 and 1 ranks train one step
whose loss and every gradient shard equal one process's; the topology the page draws puts rank
dp·(pp·tp) + stage·tp + tp_rank where it belongs, and every traced call runs in the group the rank
belongs to (TP's f and g in `tp`, the pipeline's send/recv in `pp`, the gradient sync in `dp`); the
two misplaced DP syncs cost m times the traffic, or the right gradients; impossible grids are refused,
and so is a misplaced DP sync at dp = 1 (nothing to average: it could not go wrong); at dp = 1 no
gradient sync is made and dp_sync_bytes is 0; a run that gives no grid gets the most even one its
number of ranks allows."""

from __future__ import annotations


import pytest

from tests import web
from tests.app.helpers import of_rank, run_all, run_count
from workers.lessons import LESSONS

HIDDEN, FFN = 8, 16                                                # the lesson's defaults

# (tp, pp, dp, microbatches)
GRIDS = [
    (2, 2, 2, 4), (1, 2, 4, 4), (4, 2, 1, 4), (2, 4, 1, 4), (1, 8, 1, 8),
    (2, 2, 1, 4), (2, 1, 2, 4), (1, 1, 4, 4), (4, 1, 1, 2), (1, 4, 1, 4),
    (1, 1, 1, 2),
]
MISTAKES = ("sync_every_microbatch", "sync_before_last_backward")


def key(grid, mistake="none") -> str:
    tp, pp, dp, m = grid
    return f"{tp}x{pp}x{dp}-m{m}" + ("" if mistake == "none" else f"-{mistake}")


def params_of(grid, mistake="none") -> dict:
    tp, pp, dp, m = grid
    return {"tp": tp, "pp": pp, "dp": dp, "microbatches": m, "mistake": mistake}


SPECS = {key(grid): (grid, "none") for grid in GRIDS}
SPECS.update({key(GRIDS[0], mistake): (GRIDS[0], mistake) for mistake in MISTAKES})


@pytest.fixture(scope="module")
def finished(server) -> dict[str, dict]:
    specs = [("three_d", grid[0] * grid[1] * grid[2], params_of(grid, mistake)) for grid, mistake in SPECS.values()]
    specs.append(("three_d", 6, {}))                                   # no grid given: the one for 6 ranks
    return dict(zip([*SPECS, "defaults at 6"], run_all(server, specs)))


def rank_of(d: int, s: int, t: int, tp: int, pp: int) -> int:
    return d * (pp * tp) + s * tp + t


def expected_groups(tp: int, pp: int, dp: int) -> dict[str, list[list[int]]]:
    """Each kind's groups: the ranks that differ only in that coordinate."""
    return {
        "tp": [[rank_of(d, s, t, tp, pp) for t in range(tp)] for d in range(dp) for s in range(pp)],
        "pp": [[rank_of(d, s, t, tp, pp) for s in range(pp)] for d in range(dp) for t in range(tp)],
        "dp": [[rank_of(d, s, t, tp, pp) for d in range(dp)] for s in range(pp) for t in range(tp)],
    }


def membership(tp: int, pp: int, dp: int) -> dict[str, dict[int, list[int]]]:
    """kind → rank → the members of the rank's group of that kind."""
    return {kind: {r: members for members in groups for r in members}
            for kind, groups in expected_groups(tp, pp, dp).items()}


@pytest.mark.parametrize("name", list(SPECS)[:len(GRIDS)])
def test_loss_and_every_gradient_shard_equal_one_process(finished, name):
    (tp, pp, dp, m), _ = SPECS[name]
    run = finished[name]["run"]
    assert run["status"] == "done", run["error"]
    want = []
    for r in range(tp * pp * dp):
        s = r // tp % pp
        want += [(r, f"stage {s} W1 shard gradient"), (r, f"stage {s} W2 shard gradient")]
        if s == pp - 1:
            want.append((r, "loss"))                              # the last stage knows the loss
    assert sorted((c["rank"], c["name"]) for c in run["checks"]) == sorted(want)
    assert all(c["passed"] for c in run["checks"]), [c for c in run["checks"] if not c["passed"]]


@pytest.mark.parametrize("name", list(SPECS)[:len(GRIDS)])
def test_the_topology_places_each_rank_on_the_grid(finished, name):
    (tp, pp, dp, m), _ = SPECS[name]
    got = finished[name]["events"]
    [topology] = [e for e in got if e["kind"] == "topology"]
    assert topology["rank"] == 0
    assert (topology["tp"], topology["pp"], topology["dp"]) == (tp, pp, dp)
    want = expected_groups(tp, pp, dp)
    assert {k: sorted(v) for k, v in topology["groups"].items()} == {k: sorted(v) for k, v in want.items()}
    # every rank is in exactly one group of each kind
    for kind, groups in topology["groups"].items():
        assert sorted(r for members in groups for r in members) == list(range(tp * pp * dp)), kind
    assert topology["coordinates"] == [[d, s, t] for d in range(dp) for s in range(pp) for t in range(tp)]


@pytest.mark.parametrize("name", list(SPECS))
def test_every_call_runs_in_the_rank_s_own_group(finished, name):
    (tp, pp, dp, m), mistake = SPECS[name]
    got = finished[name]["events"]
    member = membership(tp, pp, dp)
    for rank in range(tp * pp * dp):
        s = rank // tp % pp
        calls = of_rank(got, rank, "collective") + of_rank(got, rank, "p2p")
        assert calls
        for event in calls:
            label = event["label"]
            kind = ("tp" if label.startswith(("f backward", "g forward")) else
                    "pp" if label.startswith(("send ", "recv ")) else
                    "dp" if "average" in label else None)
            assert kind is not None, label
            assert (event["group"], event["ranks"]) == (kind, member[kind][rank]), (rank, label)
            assert event["kind"] == ("p2p" if kind == "pp" else "collective"), label
            if kind == "pp":
                downstream = (" activation" in label) == (event["op"] == "send")   # towards the last stage
                assert event["peer"] == rank + (tp if downstream else -tp)
                assert event["peer"] in member["pp"][rank]
        # how many: g every forward, f every backward but the first stage's (its input needs no gradient),
        # an activation and a gradient for each microbatch over each link between stages
        begins = [e for e in calls if e["phase"] == "begin"]
        labels = [e["label"].split(" of microbatch")[0].split(":")[0] for e in begins]
        assert labels.count("g forward") == m
        assert labels.count("f backward") == (m if s > 0 else 0)
        assert labels.count("send activation") == labels.count("recv gradient") == (m if s < pp - 1 else 0)
        assert labels.count("recv activation") == labels.count("send gradient") == (m if s > 0 else 0)
        assert len([e for e in calls if e["phase"] == "end"]) == len(begins)   # every call ended
        if mistake == "none" and dp > 1:
            syncs = [e for e in begins if e["label"].startswith("after the last backward")]
            assert [e["bytes"] for e in syncs] == [4 * FFN // tp * HIDDEN] * 2          # W1 and W2 shards, once
            last_backward = max(e["t"] for e in of_rank(got, rank, "compute", name="B", phase="end"))
            assert all(e["t"] >= last_backward for e in syncs)


def dp_traffic(result: dict, rank: int) -> tuple[int, int]:
    """(the dp_sync_bytes metric, the bytes of the rank's gradient all-reduces in the dp group)."""
    [metric] = [m for m in result["run"]["metrics"] if m["rank"] == rank and m["name"] == "dp_sync_bytes"]
    traced = sum(e["bytes"] for e in of_rank(result["events"], rank, "collective", phase="begin", group="dp")
                 if "replicas' losses" not in e["label"])
    return metric["value"], traced


@pytest.mark.parametrize("grid", [g for g in GRIDS if g[2] == 1], ids=key)
def test_one_replica_makes_no_gradient_sync(finished, grid):
    tp, pp, dp, m = grid
    result = finished[key(grid)]
    for rank in range(tp * pp):
        metric, traced = dp_traffic(result, rank)
        [shown] = [x for x in result["run"]["metrics"] if x["rank"] == rank and x["name"] == "dp_sync_bytes"]
        assert metric == traced == shown["expected"] == 0


def test_syncing_every_microbatch_gives_the_right_gradients_at_m_times_the_traffic(finished):
    grid = GRIDS[0]
    tp, pp, dp, m = grid
    right, wrong = finished[key(grid)], finished[key(grid, "sync_every_microbatch")]
    assert wrong["run"]["status"] == "done", wrong["run"]["error"]
    assert wrong["run"]["checks"] and all(c["passed"] for c in wrong["run"]["checks"])
    for rank in range(tp * pp * dp):
        metric, traced = dp_traffic(right, rank)
        shards = 2 * 4 * FFN // tp * HIDDEN                          # W1 and W2 shards, float32
        assert metric == traced == shards
        wrong_metric, wrong_traced = dp_traffic(wrong, rank)
        assert wrong_metric == wrong_traced == m * shards
        [shown] = [x for x in wrong["run"]["metrics"] if x["rank"] == rank and x["name"] == "dp_sync_bytes"]
        assert shown["expected"] == shards                           # the page sets it beside the right figure


def test_syncing_before_the_last_backward_gives_wrong_gradients(finished):
    grid = GRIDS[0]
    tp, pp, dp, m = grid
    result = finished[key(grid, "sync_before_last_backward")]
    run, got = result["run"], result["events"]
    assert run["status"] == "done", run["error"]
    gradients = [c for c in run["checks"] if c["name"] != "loss"]
    losses = [c for c in run["checks"] if c["name"] == "loss"]
    assert len(gradients) == 2 * tp * pp * dp and len(losses) == tp * dp
    assert not any(c["passed"] for c in gradients), [c for c in gradients if c["passed"]]
    assert all(c["passed"] for c in losses)                          # the forward pass is not affected
    for rank in range(tp * pp * dp):
        syncs = [e for e in of_rank(got, rank, "collective", phase="begin", group="dp") if "too early" in e["label"]]
        assert len(syncs) == 2
        [last] = of_rank(got, rank, "compute", name="B", microbatch=m - 1, phase="begin")
        assert all(e["t"] < last["t"] for e in syncs)


def refused(server, world: int, params: dict) -> dict:
    before = run_count(server)
    response = web.post(f"{server.url}/api/runs", json={"lesson": "three_d", "world_size": world, "params": params})
    assert response.status_code == 422, response.text
    assert run_count(server) == before                                   # nothing started
    return {tuple(e["loc"]): e["msg"] for e in response.json()["detail"]}


@pytest.mark.parametrize("world,params,field,words", [
    (8, {"tp": 2, "pp": 2, "dp": 1}, "dp", ["2 × 2 × 1 = 4", "number of ranks (8)"]),
    (4, {"tp": 2, "pp": 2, "dp": 2}, "dp", ["2 × 2 × 2 = 8", "number of ranks (4)"]),
    (8, {"tp": 4, "pp": 2, "dp": 1, "ffn": 10}, "ffn", ["ffn=10", "divisible by tp=4"]),
    (8, {"tp": 2, "pp": 4, "dp": 1, "microbatches": 3}, "microbatches", ["3 < pp=4"]),
    (4, {"tp": 2, "pp": 2, "dp": 1, "mistake": "sync_before_last_backward"}, "mistake",
     ["mistake=sync_before_last_backward", "needs dp ≥ 2", "no other replica"]),
    (2, {"tp": 1, "pp": 2, "dp": 1, "mistake": "sync_every_microbatch"}, "mistake", ["needs dp ≥ 2"]),
], ids=["product-4-of-8", "product-8-of-4", "ffn", "microbatches", "mistake-at-dp-1", "every-microbatch-at-dp-1"])
def test_impossible_grids_are_refused(server, world, params, field, words):
    errors = refused(server, world, params)
    assert list(errors) == [("body", "params", field)], errors
    for word in words:
        assert word in errors[("body", "params", field)]


def test_each_number_of_ranks_has_a_default_grid_that_fills_it(server):
    defaults = web.get(f"{server.url}/api/lessons").json()
    by_size = next(lesson for lesson in defaults if lesson["id"] == "three_d")["defaults_by_world_size"]
    assert by_size == {"1": {"tp": 1, "pp": 1, "dp": 1}, "2": {"tp": 2, "pp": 1, "dp": 1},
                       "3": {"tp": 1, "pp": 3, "dp": 1},    # ffn=16 does not split 3 ways: no tp of 3
                       "4": {"tp": 2, "pp": 2, "dp": 1},
                       "5": {"tp": 1, "pp": 1, "dp": 5},    # 4 microbatches cannot feed 5 stages
                       "6": {"tp": 2, "pp": 3, "dp": 1}, "7": {"tp": 1, "pp": 1, "dp": 7},
                       "8": {"tp": 2, "pp": 2, "dp": 2}}
    for size, grid in by_size.items():
        LESSONS["three_d"].validate({}, int(size))                   # the other defaults fit it too
    given = LESSONS["three_d"].validate({"tp": 1, "pp": 4}, 4).model_dump()     # what is given is kept
    assert (given["tp"], given["pp"], given["dp"]) == (1, 4, 1)


def test_a_run_that_gives_no_grid_runs_the_default_one(finished):
    got = finished["defaults at 6"]
    assert got["run"]["status"] == "done", got["run"]
    assert {k: got["run"]["params"][k] for k in ("tp", "pp", "dp")} == {"tp": 2, "pp": 3, "dp": 1}
    assert {e["group"] for e in got["events"] if e["kind"] == "p2p"} == {"pp"}       # three stages
    assert {len(e["ranks"]) for e in got["events"] if e.get("group") == "tp"} == {2}
