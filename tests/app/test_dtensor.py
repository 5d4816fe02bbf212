"""Lesson `dtensor` on the live server: every redistribute between Shard, Replicate and Partial on a
1-D mesh (and on a 2 × n/2 mesh from 4 ranks) makes the collective it should, with the bytes and the
mesh dimension recomputed from the raw events, and leaves each rank the right local tensor; then
parallelize_module on the tp_mlp/sp_mlp block makes the same collectives as those lessons and the
same numbers (same seed); both linears colwise fails the output and the collectives, and no other
check."""

from __future__ import annotations

import pytest

from tests.app.helpers import of_rank, run_all

pytestmark = pytest.mark.timeout(300)   # the module's runs, two at a time: about 100 s on the loaded 2-core machine

SIZE = {"rows": 8, "cols": 8, "seq_len": 8, "hidden": 16, "ffn": 64}
SP = {"plan": "sequence_parallel"}
WRONG = {"mistake": "both_colwise"}
CASES = {
    "2": (2, {}), "4": (4, {}), "8": (8, {}),
    "4-sp": (4, SP),
    "2-both-colwise": (2, WRONG),
    "4-sp-both-colwise": (4, {**SP, **WRONG}),
}
MEGATRON = {"tp_mlp-4": ("tp_mlp", 4), "sp_mlp-4": ("sp_mlp", 4)}
CORRECT = [name for name, (_, params) in CASES.items() if "mistake" not in params]
MISTAKEN = [name for name in CASES if name not in CORRECT]

MOVES_1D = {   # move: (collective, its bytes as a fraction of rows·cols·4)
    "Shard(0) → Replicate()": ("all_gather", 1), "Replicate() → Shard(1)": (None, 0),
    "Shard(1) → Shard(0)": ("all_gather", 1),          # gloo: an all-gather and a chunk, not an all-to-all
    "Partial() → Replicate()": ("all_reduce", 1), "Partial() → Shard(0)": ("reduce_scatter", 1),
}
MOVES_2D = {   # move: (collective, mesh dimension, bytes as a fraction of rows·cols·4 given world n)
    "[Shard(0), Shard(1)] → [Replicate(), Shard(1)]": ("all_gather", 0, lambda n: 2 / n),
    "[Replicate(), Shard(1)] → [Replicate(), Replicate()]": ("all_gather", 1, lambda n: 1),
    "[Partial(), Shard(1)] → [Shard(0), Shard(1)]": ("reduce_scatter", 0, lambda n: 2 / n),
}


@pytest.fixture(scope="module")
def finished(server) -> dict[str, dict]:
    specs = [("dtensor", world, params) for world, params in CASES.values()]
    specs += [(lesson, world, {}) for lesson, world in MEGATRON.values()]
    results = run_all(server, specs, in_flight=4, timeout=300)
    return dict(zip(list(CASES) + list(MEGATRON), results))


def block_checks(sp: bool) -> set[str]:
    return ({"output Y shard", "input gradient dX shard"} if sp else {"output Y", "input gradient dX"}) | {
        "collectives as Megatron's", "W1 shard gradient", "W2 shard gradient", "LayerNorm weight gradient"}


def expected_checks(world: int, sp: bool) -> set[str]:
    moves = list(MOVES_1D) + (list(MOVES_2D) if world >= 4 else [])
    return {f"{move}: {what}" for move in moves for what in ("local tensor", "collective")} | block_checks(sp)


@pytest.mark.parametrize("name", CORRECT)
def test_every_move_and_the_block_check_out(finished, name):
    world, params = CASES[name]
    run = finished[name]["run"]
    assert run["status"] == "done", run["error"]
    want = expected_checks(world, "plan" in params)
    assert sorted((c["rank"], c["name"]) for c in run["checks"]) == sorted((r, n) for r in range(world) for n in want)
    assert all(c["passed"] for c in run["checks"]), [c for c in run["checks"] if not c["passed"]]


@pytest.mark.parametrize("name", MISTAKEN)
def test_both_linears_colwise_fails_the_output_and_the_collectives_only(finished, name):
    world, params = CASES[name]
    run = finished[name]["run"]
    assert run["status"] == "done", run["error"]
    output = "output Y shard" if "plan" in params else "output Y"
    for r in range(world):
        failed = {c["name"] for c in run["checks"] if c["rank"] == r and not c["passed"]}
        assert failed == {output, "collectives as Megatron's"}, r


def spans(events: list[dict], rank: int) -> dict[str, list[dict]]:
    """The collectives (begin events) the rank made inside each compute span, by the span's name."""
    inside, current = {}, None
    for e in events:
        if e["rank"] != rank:
            continue
        if e["kind"] == "compute":
            current = e["name"] if e["phase"] == "begin" else None
            if current:
                inside.setdefault(current, [])
        elif e["kind"] == "collective" and e["phase"] == "begin" and current:
            inside[current].append(e)
    return inside


@pytest.mark.parametrize("name", CORRECT + MISTAKEN)
def test_each_move_makes_its_collective_recomputed_from_the_events(finished, name):
    world, _ = CASES[name]
    events = finished[name]["events"]
    whole = SIZE["rows"] * SIZE["cols"] * 4
    for r in range(world):
        made = spans(events, r)
        for move, (op, share) in MOVES_1D.items():
            calls = made[f"redistribute {move}"]
            assert [c["op"] for c in calls] == ([op] if op else []), (r, move)
            for call in calls:
                assert call["bytes"] == whole * share, (r, move)
                assert call["ranks"] == list(range(world))
                assert call["torch_op"].startswith("_c10d_functional.")
                assert " → ".join(_names(call["placements"][k]) for k in ("before", "after")) == move
        if world >= 4:
            for move, (op, dim, share) in MOVES_2D.items():
                [call] = made[f"redistribute {move}"]
                assert (call["op"], call["mesh"]["dim"], call["bytes"]) == (op, dim, whole * share(world)), (r, move)
                assert len(call["ranks"]) == call["mesh"]["shape"][dim] == (2 if dim == 0 else world // 2)
                assert r in call["ranks"]


def _names(placements: list) -> str:
    names = [p if isinstance(p, str) else p.get("name", str(p)) for p in placements]
    return names[0] if len(names) == 1 else "[" + ", ".join(names) + "]"


@pytest.mark.parametrize("name", CORRECT + MISTAKEN)
def test_local_bytes_recomputed_from_the_shown_tensors(finished, name):
    world, _ = CASES[name]
    run, events = finished[name]["run"], finished[name]["events"]
    keys = {"Shard(0) → Replicate()": "shard0_to_replicate", "Replicate() → Shard(1)": "replicate_to_shard1",
            "Shard(1) → Shard(0)": "shard1_to_shard0", "Partial() → Replicate()": "partial_to_replicate",
            "Partial() → Shard(0)": "partial_to_shard0"}
    for r in range(world):
        shown = {e["name"]: e["tensor"]["shape"] for e in of_rank(events, r, "tensor")}
        for move, key in keys.items():
            rows, cols = shown[f"{move}: this rank's local tensor"]
            [m] = [m for m in run["metrics"] if m["name"] == f"{key}_local_bytes" and m["rank"] == r]
            assert m["value"] == m["expected"] == rows * cols * 4, (r, move)
            sharded = "Shard" in move.split(" → ")[1]
            assert rows * cols * (world if sharded else 1) == SIZE["rows"] * SIZE["cols"]


def block_collectives(events: list[dict], rank: int, lesson: str) -> list[tuple[str, int]]:
    """(op, bytes) of the rank's collectives in the block: for dtensor from its block forward on."""
    calls = [e for e in events if e["rank"] == rank and e["kind"] == "collective" and e["phase"] == "begin"]
    if lesson == "dtensor":
        start = next(e["seq"] for e in events if e["rank"] == rank and e["kind"] == "compute"
                     and e["name"] == "block forward")
        calls = [e for e in calls if e["seq"] > start]
    return [(e["op"], e["bytes"]) for e in calls]


@pytest.mark.parametrize("name,megatron", [("4", "tp_mlp-4"), ("4-sp", "sp_mlp-4")])
def test_the_block_makes_the_megatron_lessons_collectives_and_numbers(finished, name, megatron):
    world, _ = CASES[name]
    ours, theirs = finished[name], finished[megatron]
    assert theirs["run"]["status"] == "done", theirs["run"]["error"]
    for r in range(world):
        assert sorted(block_collectives(ours["events"], r, "dtensor")) == sorted(
            block_collectives(theirs["events"], r, "megatron")), r
    # same seed, same numbers: each check's values (this rank's and the reference's) are the other lesson's
    for check in ("output Y", "output Y shard", "W1 shard gradient", "W2 shard gradient", "input gradient dX",
                  "input gradient dX shard"):
        mine = [c for c in ours["run"]["checks"] if c["name"] == check]
        other = [c for c in theirs["run"]["checks"] if c["name"] == check]
        assert len(mine) == len(other)
        for a, b in zip(sorted(mine, key=lambda c: c["rank"]), sorted(other, key=lambda c: c["rank"])):
            assert a["max_abs_err"] <= 1e-5 and b["max_abs_err"] <= 1e-5
    y_mine = _check_preview(ours["events"], 0, "output Y shard" if "sp" in name else "output Y")
    y_theirs = _check_preview(theirs["events"], 0, "output Y shard" if "sp" in name else "output Y")
    assert y_mine == pytest.approx(y_theirs, abs=1e-5)


def _check_preview(events: list[dict], rank: int, name: str) -> list:
    [check] = of_rank(events, rank, "check", name=name)
    return [v for row in check["tensors"][0]["preview"] for v in row]
