"""Runs on disk: run.json, events.jsonl in seq order, tensors by id; safe ids only."""

from __future__ import annotations

import json

import pytest

from app.recording import Recording, recorded_ids


def test_meta_events_and_tensors_round_trip(tmp_path):
    rec = Recording(tmp_path, "abc123")
    assert not rec.exists
    rec.create({"id": "abc123", "status": "queued"})
    assert rec.exists
    rec.save_meta({"id": "abc123", "status": "done"})
    assert rec.load_meta() == {"id": "abc123", "status": "done"}
    assert not (rec.dir / "run.json.tmp").exists()          # written atomically

    events = [{"seq": n, "kind": "log", "message": f"m{n}"} for n in range(1, 4)]
    for event in events:
        rec.append(json.dumps(event) + "\n")
    assert Recording(tmp_path, "abc123").load_events() == events   # readable while still open
    rec.close()
    assert rec.load_events() == events

    blob = {"blob": "r0t1", "shape": [2], "dtype": "float32", "data": b"\x00\x00\x80?\x00\x00\x00@"}   # 1.0, 2.0
    rec.save_tensor(blob)
    assert rec.load_tensor("r0t1") == blob
    assert rec.load_tensor("r0t2") is None


def test_blobs_of_either_format_are_read_as_raw_values(tmp_path):
    """A blob sent in the first format (base64 in `data`) is kept as a frame's is; a run recorded
    before frames (`tensors/<tid>.json`, base64 inside) still serves its tensors."""
    rec = Recording(tmp_path, "abc123")
    rec.create({"id": "abc123"})
    rec.save_tensor({"blob": "r0t1", "shape": [2], "dtype": "float32", "data": "AACAPwAAAEA="})
    (rec.dir / "tensors" / "r1t0.json").write_text(
        json.dumps({"blob": "r1t0", "shape": [1], "dtype": "float64", "data": "AAAgQQ=="}))   # 10.0
    rec.save_tensor({"blob": "r0t2", "shape": [2], "dtype": "float32", "data": "not base64!"})
    assert rec.load_tensor("r0t1") == {"blob": "r0t1", "shape": [2], "dtype": "float32",
                                       "data": b"\x00\x00\x80?\x00\x00\x00@"}
    assert rec.load_tensor("r1t0") == {"blob": "r1t0", "shape": [1], "dtype": "float64", "data": b"\x00\x00\x20\x41"}
    assert rec.load_tensor("r0t2") is None


def test_a_line_cut_short_by_a_crash_is_dropped(tmp_path):
    rec = Recording(tmp_path, "run1")
    rec.create({"id": "run1"})
    rec.append('{"seq": 1, "kind": "run"}\n')
    rec.append('{"seq": 2, "kind": "coll')                     # the server died mid-write
    rec.close()
    assert rec.load_events() == [{"seq": 1, "kind": "run"}]


def test_no_events_file_means_no_events(tmp_path):
    rec = Recording(tmp_path, "run1")
    rec.create({"id": "run1"})
    assert rec.load_events() == []


@pytest.mark.parametrize("bad", ["../etc", "a/b", "", "x" * 65, "run id", ".."])
def test_unsafe_ids_are_refused(tmp_path, bad):
    with pytest.raises(ValueError):
        Recording(tmp_path, bad)
    rec = Recording(tmp_path, "ok")
    rec.create({"id": "ok"})
    rec.save_tensor({"blob": bad, "data": ""})
    assert rec.load_tensor(bad) is None
    assert sorted(p.name for p in (rec.dir / "tensors").iterdir()) == []


def test_recorded_ids_lists_runs_with_a_record(tmp_path):
    assert recorded_ids(tmp_path / "missing") == []
    for run_id in ("b", "a"):
        Recording(tmp_path, run_id).create({"id": run_id})
    (tmp_path / "stray").mkdir()                               # no run.json: not a run
    assert recorded_ids(tmp_path) == ["a", "b"]


def test_rewrite_events_replaces_the_log_and_drops_a_cut_line(tmp_path):
    rec = Recording(tmp_path, "run1")
    rec.create({"id": "run1"})
    rec.append('{"seq": 1}\n')
    rec.append('{"seq": 2, "ki')
    rec.rewrite_events(rec.load_events() + [{"seq": 2, "kind": "run"}])
    assert (rec.dir / "events.jsonl").read_text() == '{"seq":1}\n{"seq":2,"kind":"run"}\n'
    rec.append('{"seq": 3}\n')                                  # appending goes on after it
    assert [e["seq"] for e in rec.load_events()] == [1, 2, 3]
