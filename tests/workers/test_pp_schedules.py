"""`workers.lessons.pp.schedules`, in process (torch imported, no process group): the ideal grid of
every schedule torch ships (and of paralab's own GPipe/1F1B engine) keeps torch's per-rank order of
actions, read here straight from torch's `get_schedule_ops`; the spacing respects every dependency and
places each action as early as they allow, checked by a checker written independently of `space`;
torch's 1F1B numbering is corrected (with a note) and nothing else is; the bubble of the grid is the
textbook formula; and each invalid combination names the field whose rule it breaks.
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

from workers.lessons.pp import schedules

TORCH = schedules.torch_schedule_names()
SIZES = ((2, 4), (4, 8), (4, 4), (3, 6))          # (p, m)
COMPUTE = {"F", "B", "I", "W", "OVERLAP_F_B"}
ACTION = re.compile(r"^(\d+)([FBIW])(\d+)$")


def stages_per_rank(schedule: str) -> int:
    return 2 if schedules.is_multi_stage(schedule) else 1


def valid_cases() -> list[tuple[str, int, int, int]]:
    """(schedule, p, m, v) for every torch schedule at every size it accepts (torch's DualPipeV needs
    m ≥ 2p, so (4, 4) is left out for it — and must be refused, see test_problems_*)."""
    cases = []
    for name in TORCH:
        v = stages_per_rank(name)
        for p, m in SIZES:
            if name == "DualPipeV" and m < p * v:
                continue
            cases.append((name, p, m, v))
    return cases


CASES = valid_cases()


def case_id(case) -> str:
    name, p, m, v = case
    return f"{name}-p{p}-m{m}-v{v}"


# ---- an independent reading of actions and grids ---------------------------------------------

def split(action: str) -> list[tuple[int, str, int]]:
    """(stage, kind, microbatch) of "2F0" or of "(0F3;3B1)OVERLAP_F_B" (two actions in one slot)."""
    if action.startswith("("):
        assert action.endswith(")OVERLAP_F_B"), action
        inner = action[1:-len(")OVERLAP_F_B")].split(";")
    else:
        inner = [action]
    out = []
    for piece in inner:
        match = ACTION.match(piece)
        assert match, f"not an action: {piece!r} (in {action!r})"
        out.append((int(match[1]), match[2], int(match[3])))
    return out


def torch_order(schedule: str, p: int, m: int, v: int) -> list[list[str]]:
    """torch's own per-rank order of compute actions, straight from get_schedule_ops."""
    ops = get_schedule_ops(schedule, p, m, num_stages_per_rank=v if schedules.is_multi_stage(schedule) else None)
    return [[str(a) for a in rank if a is not None and a.computation_type.value in COMPUTE] for rank in ops]


def compact(grid: list[list[str | None]]) -> list[list[str]]:
    return [[cell for cell in row if cell is not None] for row in grid]


def slots_of(grid) -> dict[tuple[int, str, int], tuple[int, int]]:
    """(stage, kind, microbatch) → (rank, slot); asserts each action appears exactly once."""
    where = {}
    for rank, row in enumerate(grid):
        for slot, cell in enumerate(row):
            if cell is None:
                continue
            for action in split(cell):
                assert action not in where, f"{action} appears twice: {where[action]} and {(rank, slot)}"
                where[action] = (rank, slot)
    return where


def dependencies(action, where, num_stages) -> list[tuple[int, str, int]]:
    """What must have finished before this action can start."""
    stage, kind, mb = action
    if kind == "F":
        return [(stage - 1, "F", mb)] if stage > 0 else []
    if kind in ("B", "I"):
        needs = [(stage, "F", mb)]
        if stage < num_stages - 1:
            after = [(stage + 1, k, mb) for k in ("B", "I") if (stage + 1, k, mb) in where]
            assert len(after) == 1, f"{action}: the next stage has {after} for microbatch {mb}"
            needs += after
        return needs
    assert kind == "W", action
    return [(stage, "I", mb)]


def check_grid(grid, order, p, m, num_stages, placement):
    """Every action once; every stage runs F, B-or-I, and (after I) W on microbatches 0…m−1; each
    action after its dependencies, on the rank that holds its stage, and as early as they and the
    rank's previous action allow; and the ranks keep the given order."""
    assert len(grid) == p
    assert len({len(row) for row in grid}) == 1, "rows of different widths"
    assert all(cell is None or isinstance(cell, str) for row in grid for cell in row)
    assert compact(grid) == order
    where = slots_of(grid)

    for stage in range(num_stages):
        forwards = {mb for s, k, mb in where if s == stage and k == "F"}
        full = {mb for s, k, mb in where if s == stage and k == "B"}
        inputs = {mb for s, k, mb in where if s == stage and k == "I"}
        weights = {mb for s, k, mb in where if s == stage and k == "W"}
        assert forwards == set(range(m)), f"stage {stage} forwards {sorted(forwards)}"
        assert not full & inputs and full | inputs == set(range(m)), \
            f"stage {stage}: full backwards {sorted(full)}, input-gradient backwards {sorted(inputs)}"
        assert weights == inputs, f"stage {stage}: W for {sorted(weights)}, I for {sorted(inputs)}"

    for (stage, kind, mb), (rank, slot) in where.items():
        assert stage in placement[rank], f"{stage}{kind}{mb} on rank {rank}, which holds {placement[rank]}"
        for need in dependencies((stage, kind, mb), where, num_stages):
            assert need in where, f"{stage}{kind}{mb} needs {need}, which never runs"
            assert where[need][1] < slot, \
                f"{stage}{kind}{mb} at slot {slot} before {need} finished (slot {where[need][1]})"

    for rank, row in enumerate(grid):               # as early as possible: no slack before an action
        previous = -1
        for slot, cell in enumerate(row):
            if cell is None:
                continue
            earliest = previous + 1
            for action in split(cell):
                for need in dependencies(action, where, num_stages):
                    if need not in split(cell):
                        earliest = max(earliest, where[need][1] + 1)
            assert slot == earliest, f"rank {rank}: {cell} at slot {slot}, could start at {earliest}"
            previous = slot


def bubble(grid) -> Fraction:
    busy = sum(cell is not None for row in grid for cell in row)
    return 1 - Fraction(busy, len(grid) * len(grid[0]))


# ---- torch's schedules ----------------------------------------------------------------------------

def test_the_schedules_torch_ships_are_found():
    assert {"GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble", "ZBVZeroBubble",
            "DualPipeV"} <= set(TORCH)
    assert not any("ForwardOnly" in name or name.startswith("_") for name in TORCH)
    assert not schedules.is_multi_stage("GPipe") and not schedules.is_multi_stage("1F1B")
    assert all(schedules.is_multi_stage(n) for n in ("Interleaved1F1B", "ZBVZeroBubble", "DualPipeV"))
    assert schedules.choices() == {"schedule": ["gpipe", "1f1b", *TORCH]}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_ideal_grid_keeps_torchs_order_and_respects_dependencies(case):
    name, p, m, v = case
    expected, _ = schedules.renumbered(torch_order(name, p, m, v), m)
    result = schedules.ideal(name, p, m, v)
    placement = schedules.stage_indices(name, p, m, v)
    assert compact(result["grid"]) == expected, "the grid's per-rank order is not torch's"
    assert result["order"] == expected
    assert sorted(s for stages in placement for s in stages) == list(range(p * v))
    assert all(len(stages) == v for stages in placement)
    check_grid(result["grid"], expected, p, m, p * v, placement)
    assert result["bubble_fraction"] == pytest.approx(float(bubble(result["grid"])), abs=1e-12)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_only_torchs_1f1b_is_renumbered(case):
    name, p, m, v = case
    raw = torch_order(name, p, m, v)
    fixed, notes = schedules.renumbered(raw, m)
    if name == "1F1B":
        last = [mb for stage, kind, mb in (a for action in raw[-1] for a in split(action)) if kind == "F"]
        assert last == list(range(1, m + 1)), "torch 2.13's 1F1B numbers the last rank's forwards 1…m"
        assert [a for a in fixed[-1] if "F" in a] == [f"{p - 1}F{i}" for i in range(m)]
        assert fixed[:-1] == raw[:-1], "only the last rank's order needs a fix"
        assert len(notes) == 1 and f"rank {p - 1}" in notes[0] and "renumbered" in notes[0] \
            and f"1…{m}" in notes[0] and f"0…{m - 1}" in notes[0]
        assert schedules.ideal(name, p, m, v)["notes"] == notes
    else:
        assert fixed == raw and notes == [], f"{name}'s order was changed: {notes}"
        assert schedules.ideal(name, p, m, v)["notes"] == []


def test_renumbered_keeps_an_overlap_action_whole():
    order = [["0F1", "0F2", "(0F3;1B0)OVERLAP_F_B", "1B1", "1B2"]]
    fixed, notes = schedules.renumbered(order, 3)
    assert fixed == [["0F0", "0F1", "(0F2;1B0)OVERLAP_F_B", "1B1", "1B2"]]
    assert len(notes) == 1 and "F of stage 0" in notes[0]


@pytest.mark.parametrize("p, m", SIZES)
def test_torchs_gpipe_and_1f1b_are_paralabs_own_orders(p, m):
    """After the fix, torch's 1F1B is exactly the engine's warm-up / steady / cool-down order."""
    assert torch_order("GPipe", p, m, 1) == schedules.own_actions("gpipe", p, m)
    assert schedules.renumbered(torch_order("1F1B", p, m, 1), m)[0] == schedules.own_actions("1f1b", p, m)


# ---- paralab's own engine -------------------------------------------------------------------------

@pytest.mark.parametrize("own", schedules.OWN)
@pytest.mark.parametrize("p, m", SIZES + ((2, 2), (8, 8), (4, 32)))
def test_own_grid_has_the_textbook_bubble(own, p, m):
    result = schedules.ideal(own, p, m, 1)
    check_grid(result["grid"], schedules.own_actions(own, p, m), p, m, p, [[r] for r in range(p)])
    assert result["notes"] == []
    assert bubble(result["grid"]) == Fraction(p - 1, m + p - 1)
    assert result["bubble_fraction"] == pytest.approx((p - 1) / (m + p - 1), abs=1e-12)
    assert len(result["grid"][0]) == 2 * (m + p - 1)


@pytest.mark.parametrize("p, m", SIZES)
def test_own_1f1b_warms_up_p_minus_rank_minus_one_forwards(p, m):
    for rank, order in enumerate(schedules.own_actions("1f1b", p, m)):
        warmup = p - rank - 1
        assert order[:warmup + 1] == [f"{rank}F{i}" for i in range(warmup + 1)]
        assert order[warmup + 1] == f"{rank}B0"
        alive = peak = 0                          # activations held: never more than p − rank
        for action in order:
            alive += 1 if "F" in action else -1
            peak = max(peak, alive)
        assert peak == min(p - rank, m)
    assert max(sum("F" in a for a in o[:m]) for o in schedules.own_actions("gpipe", p, m)) == m


@pytest.mark.parametrize("p, m", ((2, 4), (4, 8), (4, 4), (3, 6)))
def test_interleaving_divides_the_bubble_by_v(p, m):
    """Interleaved 1F1B with v stages per rank: (p − 1)/(v·m + p − 1); zero-bubble ones do better."""
    assert bubble(schedules.ideal("Interleaved1F1B", p, m, 2)["grid"]) == Fraction(p - 1, 2 * m + p - 1)
    one = bubble(schedules.ideal("1F1B", p, m, 1)["grid"])
    assert bubble(schedules.ideal("GPipe", p, m, 1)["grid"]) == one == Fraction(p - 1, m + p - 1)
    for zero in ("InterleavedZeroBubble", "ZBVZeroBubble"):
        assert bubble(schedules.ideal(zero, p, m, 2)["grid"]) < Fraction(p - 1, 2 * m + p - 1), zero


def test_space_reports_a_deadlock():
    with pytest.raises(ValueError, match="deadlock"):
        schedules.space([["0B0", "0F0"], ["1F0", "1B0"]], 2)


# ---- rules ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("schedule, p, m, v, field, words", [
    ("1f1b", 4, 3, 1, "microbatches", "at least as many microbatches"),
    ("1F1B", 4, 3, 1, "microbatches", "at least as many microbatches"),
    ("gpipe", 4, 8, 2, "virtual_stages", "one stage per rank"),
    ("1f1b", 4, 8, 2, "virtual_stages", "one stage per rank"),
    ("GPipe", 4, 8, 2, "virtual_stages", "one stage per rank"),
    ("1F1B", 2, 4, 3, "virtual_stages", "one stage per rank"),
    ("Interleaved1F1B", 4, 6, 2, "microbatches", "divisible by 4"),
    ("InterleavedZeroBubble", 4, 6, 2, "microbatches", "divisible by 4"),
    ("Interleaved1F1B", 4, 8, 1, "virtual_stages", "stages_per_rank"),
    ("LoopedBFS", 4, 8, 1, "virtual_stages", "stages_per_rank"),
    ("ZBVZeroBubble", 4, 8, 3, "virtual_stages", "exactly 2 stages per rank"),
    ("ZBVZeroBubble", 4, 8, 1, "virtual_stages", "stages_per_rank"),
    ("DualPipeV", 4, 8, 3, "virtual_stages", "exactly 2 stages per rank"),
    ("DualPipeV", 4, 8, 1, "virtual_stages", "stages_per_rank"),
    ("DualPipeV", 4, 4, 2, "microbatches", "at least as many microbatches as stages"),
    ("Zigzag", 4, 8, 1, "schedule", "unknown schedule 'Zigzag'"),
    ("gpipe_", 4, 8, 1, "schedule", "unknown schedule"),
])
def test_problems_name_the_field_of_the_broken_rule(schedule, p, m, v, field, words):
    found = schedules.problems(schedule, p, m, v)
    assert found, f"{schedule} p={p} m={m} v={v} was accepted"
    assert [f for f, *_ in found] == [field] * len(found), found
    assert any(words in message for _, message, *_ in found), found
    assert all(code.startswith("pp.") and isinstance(params, dict) for *_, code, params in found), found


def test_an_unknown_schedule_lists_the_choices():
    (field, message, code, params), = schedules.problems("Zigzag", 4, 8, 1)
    assert (code, params["schedule"]) == ("pp.unknown_schedule", "Zigzag")
    for name in ["gpipe", "1f1b", *TORCH]:
        assert repr(name) in message


@pytest.mark.parametrize("case", CASES + [("gpipe", p, m, 1) for p, m in SIZES]
                         + [("1f1b", p, p, 1) for p in (2, 4, 8)] + [("GPipe", 4, 1, 1)], ids=case_id)
def test_valid_combinations_have_no_problems(case):
    assert schedules.problems(*case) == []
