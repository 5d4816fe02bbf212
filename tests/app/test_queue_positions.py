"""A queued run is told its place in the queue, and told again whenever a run ahead of it leaves
(starts, or is cancelled while waiting)."""

from __future__ import annotations

from app.hub import Hub
from app.routes.runs import run_public
from app.runs import RunManager
from app.settings import Settings


def positions(run) -> list[int]:
    return [e["position"] for e in run.events if e["kind"] == "run" and e["status"] == "queued"]


def test_positions_move_up_as_runs_ahead_leave(tmp_path):
    manager = RunManager(Settings(DATA_DIR=tmp_path), Hub())     # no scheduler: every run waits
    first, second, third = (manager.create("tp_mlp", 2, {}, False, "gloo") for _ in range(3))
    assert [positions(r) for r in (first, second, third)] == [[1], [2], [3]]
    assert run_public(third).position == 3

    manager.cancel(first)
    assert [positions(r) for r in (first, second, third)] == [[1], [2, 1], [3, 2]]
    assert run_public(first).position is None and run_public(third).position == 2

    manager.cancel(third)                                          # behind the others: nobody moves
    assert positions(second) == [2, 1]
    fourth = manager.create("tp_mlp", 2, {}, False, "gloo")
    assert positions(fourth) == [2]
