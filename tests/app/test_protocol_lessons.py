"""Every event of every lesson, at 2 and 4 ranks, is well formed by the protocol's own schema: the
server checked each at ingest (a malformed one would have failed the run with a `protocol` error),
and the recorded log is checked here again, with the fields the page needs in place."""

from __future__ import annotations

import pytest

from workers.lessons import LESSONS, LESSONS_DIR
from workers.protocol import problem

EXPECTED_STATUS = {"deadlock": "failed"}   # it hangs on purpose
OWN_LESSONS = [lesson_id for lesson_id, lesson in LESSONS.items() if lesson.dir.parent == LESSONS_DIR]


@pytest.fixture(scope="module")
def lesson_runs(every_lesson_logs) -> dict[tuple[str, int], tuple[dict, list[dict]]]:
    """Every lesson at 2 and 4 ranks (the session's shared runs): (its run, its recorded events)."""
    return {entry["spec"][:2]: (entry["run"], entry["events"]) for entry in every_lesson_logs if not entry["variant"]}


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("lesson", OWN_LESSONS)
def test_every_event_of_the_lesson_is_well_formed(lesson_runs, lesson, world):
    run, recorded = lesson_runs[lesson, world]
    assert run["status"] == EXPECTED_STATUS.get(lesson, "done"), run["error"]
    assert (run["error"] or {}).get("kind") != "protocol"
    wrong = [(e["seq"], problem({k: v for k, v in e.items() if k != "seq"})) for e in recorded]
    assert [w for w in wrong if w[1] is not None] == []
    for event in recorded:
        if event["kind"] == "metric":
            assert event.get("formula"), f"{lesson}: metric {event['name']} has no formula"
        if event["kind"] in ("collective", "p2p"):
            assert event["wire_bytes"] >= 0
            if event["phase"] == "end":
                assert 0 <= event["duration"] and event["t_call"] <= event["t"]


FACTORS = {   # bytes each rank sends, per byte of the call's size (nccl-tests' factors), on p ranks
    "all_reduce": lambda p: 2 * (p - 1) / p, "all_gather": lambda p: (p - 1) / p,
    "reduce_scatter": lambda p: (p - 1) / p, "all_to_all": lambda p: (p - 1) / p,
    "scatter": lambda p: (p - 1) / p, "gather": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1, "reduce": lambda p: 1, "send": lambda p: 1, "recv": lambda p: 0, "barrier": lambda p: 0,
}


def calls(lesson_runs, lesson: str, world: int, phase: str = "begin") -> list[dict]:
    return [e for e in lesson_runs[lesson, world][1] if e["kind"] in ("collective", "p2p") and e["phase"] == phase]


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("lesson", OWN_LESSONS)
def test_wire_bytes_follow_the_algorithm(lesson_runs, lesson, world):
    for event in calls(lesson_runs, lesson, world):
        assert event["wire_bytes"] == round(event["bytes"] * FACTORS[event["op"]](len(event["ranks"]))), event


def test_sequence_parallel_sends_what_tensor_parallel_sends(lesson_runs):
    """sp_mlp's calls add up to twice tp_mlp's size, yet the same bytes on the wire (its LayerNorm
    all-reduce aside)."""
    def totals(lesson):
        made = [e for e in calls(lesson_runs, lesson, 4) if e["rank"] == 0 and "LayerNorm" not in e.get("label", "")]
        return sum(e["bytes"] for e in made), sum(e["wire_bytes"] for e in made)
    (tp_size, tp_wire), (sp_size, sp_wire) = totals("tp_mlp"), totals("sp_mlp")
    assert tp_size > 0 and sp_size == 2 * tp_size
    assert sp_wire == tp_wire == 2 * 2 * 3 / 4 * 8 * 16 * 4   # 2 all-reduces of S·H floats, 2(p−1)/p


def test_bucketed_data_parallel_names_each_calls_bucket(lesson_runs):
    reduces = [e for e in calls(lesson_runs, "dp", 4) if e["op"] == "all_reduce" and e["group"] == "world"
               and e.get("label", "").startswith("bucket")]
    assert reduces
    for event in reduces:
        assert event["label"].startswith(f"bucket {event['bucket']}:")
    assert {e["bucket"] for e in reduces} == set(range(len({e["bucket"] for e in reduces})))


def test_ring_sends_and_receives_say_which_chunk_travels(lesson_runs):
    world = 4
    ring = [e for e in calls(lesson_runs, "ring_allreduce", world) if e["kind"] == "p2p" and "chunk" in e]
    assert len(ring) == world * 2 * 2 * (world - 1)   # each rank: 2(p−1) steps, a send and a receive each
    for rank in range(world):
        sent = [e["chunk"] for e in ring if e["rank"] == rank and e["op"] == "send"]
        received = [e["chunk"] for e in ring if e["rank"] == (rank + 1) % world and e["op"] == "recv"]
        assert sent == received                       # what rank r sends is what r + 1 takes
        assert sent[0] == rank                        # step 1 of the reduce-scatter: its own chunk


def test_zero_metrics_carry_psi_and_the_formula_value(lesson_runs):
    for world in (2, 4):
        metrics = [e for e in lesson_runs["zero", world][1] if e["kind"] == "metric"]
        assert metrics and all(isinstance(e["psi"], int) and e["psi"] > 0 for e in metrics)
        [comm] = [e for e in metrics if e["name"] == "comm_elements_per_step" and e["rank"] == 0]
        assert comm["expected"] in (2 * comm["psi"], 3 * comm["psi"])


def test_pipeline_schedule_names_the_slow_stage_and_its_factor(lesson_runs):
    [slow] = [e for e in lesson_runs["pp", 4][1] if e["kind"] == "schedule"]
    assert (slow["slow_stage"], slow["slow_factor"]) == (1, 3)
    [plain] = [e for e in lesson_runs["pp", 2][1] if e["kind"] == "schedule"]
    assert "slow_stage" not in plain and "slow_factor" not in plain
