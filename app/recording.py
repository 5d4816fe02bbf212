"""Runs on disk: `DATA_DIR/runs/<id>/` holds `run.json` (what was asked and how it ended),
`events.jsonl` (every event, in `seq` order) and `tensors/<tid>.blob` (full tensors by id: a header
line, then the raw float32 values; runs recorded before that have `tensors/<tid>.json`, base64 inside).
A recorded run replays from these files alone, after a restart, with no ranks."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from workers.protocol import blob_values

_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class Recording:
    def __init__(self, root: Path, run_id: str):
        if not _SAFE_ID.match(run_id):
            raise ValueError(f"bad run id {run_id!r}")
        self.dir = root / run_id
        self._events_file = None

    @property
    def exists(self) -> bool:
        return (self.dir / "run.json").exists()

    def create(self, meta: dict) -> None:
        (self.dir / "tensors").mkdir(parents=True, exist_ok=True)
        self.save_meta(meta)

    def save_meta(self, meta: dict) -> None:
        tmp = self.dir / "run.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1))
        os.replace(tmp, self.dir / "run.json")

    def load_meta(self) -> dict:
        return json.loads((self.dir / "run.json").read_text())

    def append(self, line: str) -> None:
        if self._events_file is None:
            self._events_file = open(self.dir / "events.jsonl", "a", buffering=1)  # line-buffered: a crash loses nothing
        self._events_file.write(line)

    def flush(self) -> None:
        if self._events_file is not None:
            self._events_file.flush()

    def close(self) -> None:
        if self._events_file is not None:
            self._events_file.close()
            self._events_file = None

    def delete(self) -> None:
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def load_events(self) -> list[dict]:
        path = self.dir / "events.jsonl"
        if not path.exists():
            return []
        events = []
        with open(path) as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:   # a line cut short by a crash
                    break
        return events

    def events_bytes(self, count: int) -> bytes | None:
        """The log as written, if it holds exactly `count` whole lines (else None: a line still being
        written, or a log that is not the one in memory)."""
        try:
            data = (self.dir / "events.jsonl").read_bytes()
        except OSError:
            return None
        whole = data.endswith(b"\n") or not data
        return data if whole and data.count(b"\n") == count else None

    def rewrite_events(self, events: list[dict]) -> None:
        """Replace the whole log (which drops a line cut short by a crash)."""
        self.close()
        tmp = self.dir / "events.jsonl.tmp"
        tmp.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))
        os.replace(tmp, self.dir / "events.jsonl")

    def save_tensor(self, blob: dict) -> None:
        """Keep a blob as it came in a frame: its header line, then its raw values (`<tid>.blob`). One
        whose base64 is not (the first format's `data`) is not kept: its id answers 404."""
        tensor_id = blob["blob"]
        if not _SAFE_ID.match(tensor_id):
            return
        try:
            values = blob_values(blob)
        except ValueError:
            return
        header = {k: v for k, v in blob.items() if k not in ("data", "nbytes")}
        header["nbytes"] = len(values)
        (self.dir / "tensors" / f"{tensor_id}.blob").write_bytes(json.dumps(header).encode() + b"\n" + values)

    def load_tensor(self, tensor_id: str) -> dict | None:
        """`{"blob", "shape", "dtype", "data"}`, `data` the raw values, from a `.blob` file or (recorded
        before frames) a `.json` one with base64 values; None when there is none."""
        if not _SAFE_ID.match(tensor_id):
            return None
        path = self.dir / "tensors" / f"{tensor_id}.blob"
        if path.exists():
            header, _, values = path.read_bytes().partition(b"\n")
            blob = json.loads(header)
            blob.pop("nbytes", None)
            return {**blob, "data": values}
        path = path.with_suffix(".json")
        if not path.exists():
            return None
        blob = json.loads(path.read_text())
        try:
            return {**blob, "data": blob_values(blob)}
        except ValueError:
            return None


def recorded_ids(root: Path) -> list[str]:
    if not root.exists():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "run.json").exists())
