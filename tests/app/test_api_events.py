"""GET /api/runs/{id}/events: a finished run's log is served as its recording wrote it (not encoded again),
byte for byte what encoding its events gives, whatever `since` asks for: in memory, read back after a
restart, and while the run is live. In process: the manager fed the protocol's messages (no ranks)."""

from __future__ import annotations

import asyncio
import json

from app.hub import Hub
from app.recording import Recording
from app.runs import RunManager
from app.settings import Settings
from tests.app.test_run_manager import all_reduce, report


def encoded(events: list[dict]) -> bytes:
    """What the endpoint has always sent: each event as compact JSON, one a line."""
    return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events).encode()


def served_as_encoded(manager: RunManager, run) -> None:
    for since in (-3, 0, 1, 2, len(run.events) - 1, len(run.events), len(run.events) + 5):
        assert manager.encoded_events_since(run, since) == encoded(run.events[max(since, 0):]), since


MESSAGES = [  # a tensor preview's floats (a NaN, an inf), a non-ASCII label: what the encoding must keep
    all_reduce("begin", 0.1, label="g: Σ the partial outputs — 和",
               tensors=[{"name": "x", "shape": [2], "dtype": "float32", "preview": [[0.1, float("nan")]],
                         "stats": {"min": 0.1, "max": float("inf"), "mean": 1e-7, "abs_max": 3.0000001}}]),
    all_reduce("end", 0.25),
    {"kind": "log", "level": "output", "t": 0.3, "message": "tschüss\n"},
]


def finished_run(data_dir, messages: list[dict]):
    """A 1-rank run that takes `messages` from its rank, then its supervisor's report: (the manager, the
    run, its events as the endpoint served them before the report)."""
    async def scenario():
        manager = RunManager(Settings(DATA_DIR=data_dir), Hub())
        manager.runs_dir.mkdir(parents=True)
        run = manager.create("crash", 1, {}, False, "gloo")
        run.status = "running"
        for message in messages:
            manager.ingest.take(run, 0, dict(message))
        live = manager.encoded_events_since(run, 0)
        manager.ingest.take(run, None, report((0, 0, False))[1])
        await asyncio.wait_for(run.finished.wait(), 5)
        return manager, run, live
    return asyncio.run(scenario())


def test_a_finished_runs_events_are_its_recordings_bytes_from_any_seq(tmp_path):
    manager, run, live = finished_run(tmp_path, MESSAGES)
    assert run.final and len(run.events) >= 5
    assert live == encoded(run.events[:live.count(b"\n")])          # a live run's: encoded as they are asked for
    served_as_encoded(manager, run)
    on_disk = (tmp_path / "runs" / run.id / "events.jsonl").read_bytes()
    assert manager.encoded_events_since(run, 0) == on_disk

    restarted = RunManager(Settings(DATA_DIR=tmp_path), Hub())      # read back from disk after a restart
    restarted.store.load_recorded()
    again = restarted.get(run.id)
    assert again is not run and again.events == json.loads(json.dumps(run.events))
    served_as_encoded(restarted, again)


def test_a_recording_that_is_not_the_log_in_memory_is_not_served(tmp_path):
    """A recording with a line cut short, or other lines than the run holds, is encoded from the events."""
    manager, run, _ = finished_run(tmp_path, [])
    recording = Recording(tmp_path / "runs", run.id)
    path = recording.dir / "events.jsonl"
    path.write_bytes(path.read_bytes() + b'{"seq":99,"kind":"lo')
    served_as_encoded(manager, run)
    path.write_bytes(path.read_bytes().rsplit(b"\n", 2)[0] + b"\n")  # a line short of the log
    served_as_encoded(manager, run)
    path.unlink()
    served_as_encoded(manager, run)
