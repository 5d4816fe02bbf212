"""Pipeline schedules: the ones torch ships, found at run time, and their ideal grids.

torch.distributed.pipelining describes each schedule as an order of actions per rank ("2F0": stage
2, forward, microbatch 0; B full backward, I input-gradient backward, W weight-gradient backward).
The ideal grid places each rank's actions in that order on a time axis of unit-length slots, each as
early as its dependencies allow:
    F(s, i)   after F(s−1, i)                     the activation must arrive from the previous stage
    B/I(s, i) after F(s, i) and B/I(s+1, i)       the gradient must arrive from the next stage
    W(s, i)   after I(s, i)
We space the grid ourselves rather than with torch's `add_spacing` (which raises for GPipe and 1F1B
in torch 2.13), and check torch's order before using it: `Schedule1F1B`'s order numbers the last
rank's forwards 1…m where its runtime runs 0…m−1, so such an order is renumbered, with a note.
"""

from __future__ import annotations

import inspect
import re

import torch.distributed.pipelining.schedules as torch_schedules
from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

OWN = ("gpipe", "1f1b")          # paralab's own engine (engine.py)
_COMPUTE = {"F", "B", "I", "W"}
_ACTION = re.compile(r"^(\d+)([FBIW])(\d+)$")


def torch_schedule_names() -> list[str]:
    """The concrete schedules this torch offers, by the names `get_schedule_class` accepts."""
    names = []
    for name, cls in inspect.getmembers(torch_schedules, inspect.isclass):
        if name.startswith("Schedule") and issubclass(cls, torch_schedules._PipelineSchedule) \
                and not name.startswith("_") and "ForwardOnly" not in name:
            try:
                torch_schedules.get_schedule_class(name.removeprefix("Schedule"))
            except ValueError:
                continue
            names.append(name.removeprefix("Schedule"))
    return sorted(names)


def is_multi_stage(schedule: str) -> bool:
    cls = torch_schedules.get_schedule_class(schedule)
    return issubclass(cls, torch_schedules.PipelineScheduleMulti)


def torch_actions(schedule: str, p: int, m: int, v: int) -> list[list[str]]:
    """torch's per-rank order of compute actions (raises torch's own error for invalid p, m, v)."""
    stages = v if is_multi_stage(schedule) else None
    grid = get_schedule_ops(schedule, p, m, num_stages_per_rank=stages)
    return [[str(a) for a in rank if a is not None and _is_compute(a)] for rank in grid]


def _is_compute(action) -> bool:
    kind = action.computation_type.value
    return kind in _COMPUTE or kind == "OVERLAP_F_B"


def own_actions(schedule: str, p: int, m: int) -> list[list[str]]:
    """The order paralab's engine runs: GPipe all forwards then all backwards; 1F1B warm-up,
    steady one-forward-one-backward, cool-down."""
    orders = []
    for rank in range(p):
        if schedule == "gpipe":
            orders.append([f"{rank}F{i}" for i in range(m)] + [f"{rank}B{i}" for i in range(m)])
            continue
        warmup = min(p - rank - 1, m)
        order = [f"{rank}F{i}" for i in range(warmup)]
        for i in range(m - warmup):
            order += [f"{rank}F{warmup + i}", f"{rank}B{i}"]
        order += [f"{rank}B{i}" for i in range(m - warmup, m)]
        orders.append(order)
    return orders


def parts(action: str) -> list[tuple[int, str, int]]:
    """(stage, kind, microbatch) of an action; an OVERLAP_F_B action holds two."""
    inner = action[1:action.index(")")].split(";") if action.startswith("(") else [action]
    return [(int(s), k, int(i)) for s, k, i in (_ACTION.match(a).groups() for a in inner)]


def renumbered(order: list[list[str]], m: int) -> tuple[list[list[str]], list[str]]:
    """Make each (stage, kind) run microbatches 0…m−1 in the order they appear; notes say what changed."""
    notes, fixed = [], []
    for rank, actions in enumerate(order):
        seen: dict[tuple[int, str], list[int]] = {}
        for action in actions:
            for stage, kind, mb in parts(action):
                seen.setdefault((stage, kind), []).append(mb)
        remap = {}
        for (stage, kind), mbs in seen.items():
            if sorted(mbs) != list(range(len(mbs))) and len(mbs) == m:
                remap[(stage, kind)] = iter(range(m))
                notes.append(f"torch's order numbers rank {rank}'s {kind} of stage {stage} as microbatches "
                             f"{min(mbs)}…{max(mbs)}; its runtime runs 0…{m - 1}: renumbered")
        fixed.append([_renumber(a, remap) for a in actions] if remap else list(actions))
    return fixed, notes


def _renumber(action: str, remap: dict) -> str:
    pieces = [f"{s}{k}{next(remap[(s, k)]) if (s, k) in remap else i}" for s, k, i in parts(action)]
    return pieces[0] if len(pieces) == 1 else f"({';'.join(pieces)})OVERLAP_F_B"


def space(order: list[list[str]], num_stages: int) -> list[list[str | None]]:
    """Place each rank's actions, in order, in the earliest unit slot its dependencies allow."""
    done: dict[tuple[int, str, int], int] = {}          # (stage, kind, mb) → slot it finished in
    position = [0] * len(order)
    grids: list[list[str | None]] = [[] for _ in order]
    while any(position[r] < len(order[r]) for r in range(len(order))):
        best = None
        for rank, actions in enumerate(order):
            if position[rank] == len(actions):
                continue
            ready = _ready_slot(parts(actions[position[rank]]), done, num_stages)
            if ready is not None:
                start = max(ready, len(grids[rank]))
                if best is None or start < best[0]:
                    best = (start, rank)
        if best is None:
            raise ValueError("the schedule deadlocks: no rank's next action can run")
        start, rank = best
        action = order[rank][position[rank]]
        grids[rank] += [None] * (start - len(grids[rank])) + [action]
        for stage, kind, mb in parts(action):
            done[(stage, kind, mb)] = start
        position[rank] += 1
    width = max(len(g) for g in grids)
    return [g + [None] * (width - len(g)) for g in grids]


def _ready_slot(actions, done, num_stages) -> int | None:
    """The first slot at which every dependency of these actions has finished, or None."""
    needs = []
    for stage, kind, mb in actions:
        if kind == "F" and stage > 0:
            needs.append((stage - 1, "F", mb))
        if kind in ("B", "I"):
            needs.append((stage, "F", mb))
            if stage < num_stages - 1:
                needs.append((stage + 1, "B", mb) if (stage + 1, "B", mb) in done else (stage + 1, "I", mb))
        if kind == "W":
            needs.append((stage, "I", mb))
    own = {(s, k, i) for s, k, i in actions}
    slots = []
    for need in needs:
        if need in own:
            continue
        if need not in done:
            return None
        slots.append(done[need] + 1)
    return max(slots, default=0)


def ideal(schedule: str, p: int, m: int, v: int) -> dict:
    """The ideal grid, its bubble fraction, and notes on where torch's own grid was corrected."""
    if schedule in OWN:
        order, notes, stages = own_actions(schedule, p, m), [], p
    else:
        order, notes = renumbered(torch_actions(schedule, p, m, v), m)
        stages = p * (v if is_multi_stage(schedule) else 1)
    grid = space(order, stages)
    busy = sum(cell is not None for row in grid for cell in row)
    return {"grid": grid, "order": order, "notes": notes,
            "bubble_fraction": 1 - busy / (len(grid) * len(grid[0]))}


def stage_indices(schedule: str, p: int, m: int, v: int) -> list[list[int]]:
    """Which stages each rank holds, as torch's schedule places them (loop or V shape)."""
    if schedule in OWN or not is_multi_stage(schedule):
        return [[r] for r in range(p)]
    return [sorted({s for a in rank for s, _, _ in parts(a)}) for rank in torch_actions(schedule, p, m, v)]


def _problem(field: str, code: str, english: str, **params) -> tuple[str, str, str, dict]:
    """(field, English message, code, params): the code and params are the 422's `type` and `params`."""
    return field, english.format(**params), code, params


def problems(schedule: str, p: int, m: int, v: int) -> list[tuple[str, str, str, dict]]:
    """(field, message, code, params) for each rule these values break; torch's own checks included."""
    if schedule in OWN or schedule in ("GPipe", "1F1B"):
        found = []
        if v != 1:
            found.append(_problem("virtual_stages", "pp.one_stage_per_rank",
                                  "{schedule} runs one stage per rank: virtual_stages must be 1", schedule=schedule))
        if schedule.lower() == "1f1b" and m < p:
            found.append(_problem("microbatches", "pp.microbatches_cover_stages", "1F1B needs at least as many "
                                  "microbatches as stages: microbatches={value} < {ranks} ranks", value=m, ranks=p))
        if found or schedule in OWN:
            return found
    if schedule not in torch_schedule_names():
        return [_problem("schedule", "pp.unknown_schedule", "unknown schedule '{schedule}'; choose one of {known}",
                         schedule=schedule, known=str(list(OWN) + torch_schedule_names()))]
    try:
        order = torch_actions(schedule, p, m, v)
        if schedule.startswith("Interleaved") and m % p:
            return [_problem("microbatches", "pp.interleaved_rounds", "{schedule} interleaves rounds of {ranks} "
                             "microbatches (one per rank): microbatches={value} must be divisible by {ranks}",
                             schedule=schedule, ranks=p, value=m)]
        space(renumbered(order, m)[0], p * (v if is_multi_stage(schedule) else 1))
    except (ValueError, AssertionError) as exc:
        stages_rule = "stages per rank" in str(exc) or "stages_per_rank" in str(exc)   # torch says both
        field = "virtual_stages" if stages_rule else "microbatches"
        return [_problem(field, "pp.torch_refused", "{schedule}: {reason}", schedule=schedule, reason=str(exc))]
    return []


# ---- the lesson's rules that need torch: run in the warm launcher (see workers/lessons/__init__.py)
def choices() -> dict[str, list[str]]:
    return {"schedule": list(OWN) + torch_schedule_names()}


def check(params, world_size: int) -> list[tuple[str, str, str, dict]]:
    return problems(params.schedule, world_size, params.microbatches, params.virtual_stages)
