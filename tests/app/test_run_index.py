"""`GET /api/runs` lists from an index built once at start and kept as runs are created and end:
with thousands of recorded runs, a listing reads no file."""

from __future__ import annotations

import pytest

from app.hub import Hub
from app.recording import Recording
from app.runs import RunManager
from app.settings import Settings


def recorded_runs(root, count: int) -> None:
    for n in range(count):
        Recording(root, f"run{n:05d}").create({
            "id": f"run{n:05d}", "lesson": "tp_mlp", "world_size": 2, "params": {}, "step": False,
            "backend": "gloo", "created_at": 1_000_000.0 + (n * 7919) % count, "owner": f"u{n % 3}",
            "status": "done", "error": None, "event_count": 10})


def test_listing_reads_no_file_and_knows_new_runs(tmp_path, monkeypatch):
    manager = RunManager(Settings(DATA_DIR=tmp_path), Hub())
    recorded_runs(manager.runs_dir, 3000)
    manager.store.load_recorded()                       # what start() does, without a launcher

    def no_reading(self):
        raise AssertionError("a listing read run.json")
    monkeypatch.setattr(Recording, "load_meta", no_reading)

    newest = manager.list(5)
    assert [m["created_at"] for m in newest] == [1_000_000.0 + c for c in (2999, 2998, 2997, 2996, 2995)]
    theirs = manager.list(10_000, owner="u1")
    assert len(theirs) == 1000 and {m["owner"] for m in theirs} == {"u1"}

    run = manager.create("tp_mlp", 2, {}, False, "gloo", owner="u1")     # in memory: its live state
    assert manager.list(1)[0] == run.meta() and manager.list(1, owner="u1")[0]["status"] == "queued"
    assert manager.list(1, owner="u2")[0]["owner"] == "u2"


@pytest.mark.parametrize("limit", [0, -3])
def test_a_limit_of_nothing_lists_nothing(tmp_path, limit):
    manager = RunManager(Settings(DATA_DIR=tmp_path), Hub())
    recorded_runs(manager.runs_dir, 3)
    manager.store.load_recorded()
    assert manager.list(limit) == []
