"""Where runs are kept: the runs in memory (the ended ones least recently used leave first), the index
of every recorded run, and each run's log — numbered, written to disk, and published to its readers."""

from __future__ import annotations

import heapq
import json
import logging
import time

from app.hub import Hub
from app.messages import run_error, say
from app.recording import Recording, recorded_ids
from app.run import Run
from app.settings import Settings
from workers.protocol import FINAL_STATUSES, Run as RunEvent

log = logging.getLogger("paralab.runs")


class RunStore:
    def __init__(self, settings: Settings, hub: Hub):
        self.settings = settings
        self.hub = hub
        self.runs: dict[str, Run] = {}
        self._recordings: dict[str, Recording] = {}
        self._recorded: dict[str, dict] = {}              # every recorded run's saved meta, by id

    @property
    def runs_dir(self):
        return self.settings.DATA_DIR / "runs"

    def load_recorded(self) -> None:
        """Index the recorded runs (for `list`), and say in the record of each run the previous
        server left unfinished that it can never finish."""
        for run_id in recorded_ids(self.runs_dir):
            recording = Recording(self.runs_dir, run_id)
            try:
                meta = recording.load_meta()
                if not isinstance(meta, dict) or not isinstance(meta.get("created_at", 0), (int, float)):
                    raise ValueError("not a run's meta")
            except (OSError, ValueError) as exc:    # one damaged record must not stop the server
                log.warning("run %s skipped: its run.json cannot be read (%s)", run_id, exc)
                continue
            self._recorded[run_id] = meta
            if meta.get("status") not in FINAL_STATUSES:
                meta["status"] = "failed"
                meta["error"] = run_error("interrupted", say("run.interrupted", "the server stopped while this run was in flight"))
                events = recording.load_events()   # the log, too, ends with how the run ended
                ended = RunEvent(t=events[-1]["t"] if events else 0.0, status="failed", error=meta["error"])
                events.append({"seq": len(events) + 1, "rank": None, **ended.to_dict()})
                recording.rewrite_events(events)
                meta["event_count"] = len(events)
                recording.save_meta(meta)

    def close(self) -> None:
        for recording in self._recordings.values():
            recording.close()

    # ---- runs -----------------------------------------------------------------------------------
    def add(self, run: Run) -> None:
        """A new run: kept in memory, and its record begun on disk."""
        self.runs[run.id] = run
        self._recording(run.id).create(self._index(run))

    def get(self, run_id: str) -> Run | None:
        if run_id in self.runs:
            self.runs[run_id] = self.runs.pop(run_id)          # most recently used last
            return self.runs[run_id]
        if run_id not in self._recorded:      # never cached: an id probed in vain costs nothing kept
            return None
        recording = self._recording(run_id)
        try:
            meta = recording.load_meta()
            run = Run(id=meta["id"], lesson=meta["lesson"], world_size=meta["world_size"], params=meta["params"],
                      step=meta.get("step", False), backend=meta.get("backend", "gloo"), owner=meta.get("owner"),
                      room=meta.get("room"), created_at=meta["created_at"], status=meta["status"],
                      error=meta.get("error"), events=recording.load_events())
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("run %s cannot be read back: %s", run_id, exc)
            self._recordings.pop(run_id, None)
            return None
        run.finished.set()
        self.runs[run_id] = run
        self.forget_old()
        return run

    def list(self, limit: int = 50, owner: str | None = None) -> list[dict]:
        """The newest runs (of `owner`, if given), from memory and the index: no file is read."""
        metas = (run.meta() if (run := self.runs.get(run_id)) else meta for run_id, meta in self._recorded.items())
        if owner is not None:
            metas = (meta for meta in metas if meta.get("owner") == owner)
        return heapq.nlargest(limit, metas, key=lambda meta: meta.get("created_at", 0))

    def owned_by(self, owner: str) -> list[str]:
        return [run_id for run_id, meta in self._recorded.items() if meta.get("owner") == owner]

    def delete(self, run_id: str) -> None:
        """The run is gone from memory, the index and the disk."""
        self.runs.pop(run_id, None)
        self._recorded.pop(run_id, None)
        (self._recordings.pop(run_id, None) or Recording(self.runs_dir, run_id)).delete()

    def add_recorded(self, meta: dict, events: list[dict]) -> None:
        """A run that ended elsewhere (a judged submission's, app/judged_runs.py): written and indexed,
        read back by `get` as any recorded run."""
        recording = Recording(self.runs_dir, meta["id"])
        recording.create(meta)
        recording.rewrite_events(events)
        self._recorded[meta["id"]] = meta

    def has(self, run_id: str) -> bool:
        return run_id in self.runs or run_id in self._recorded

    def save(self, run: Run) -> None:
        """The run has ended: its log flushed and its meta saved (and indexed)."""
        recording = self._recording(run.id)
        recording.flush()
        recording.save_meta(self._index(run))

    def forget_old(self) -> None:
        """Keep at most RUNS_IN_MEMORY ended runs in memory, the least recently used go (they are
        on disk and come back on the next `get`)."""
        ended = [run_id for run_id, run in self.runs.items() if run.final]
        for run_id in ended[: max(len(ended) - self.settings.RUNS_IN_MEMORY, 0)]:
            del self.runs[run_id]
            recording = self._recordings.pop(run_id, None)
            if recording is not None:
                recording.close()

    # ---- the log ----------------------------------------------------------------------------------
    def record(self, run: Run, event: dict) -> dict:
        """Number an event, keep it, write it and send it to every subscriber of the run."""
        event = {"seq": len(run.events) + 1, "rank": event.pop("rank", None),
                 "t": round(event.pop("t", time.monotonic() - run.t0), 6), **event}
        run.events.append(event)
        self._recording(run.id).append(json.dumps(event, separators=(",", ":")) + "\n")
        self.hub.publish(run.id, event)
        run.note(event)
        return event

    def save_tensor(self, run: Run, blob: dict) -> None:
        self._recording(run.id).save_tensor(blob)

    def tensor(self, run: Run, tensor_id: str) -> dict | None:
        return self._recording(run.id).load_tensor(tensor_id)

    @staticmethod
    def events_since(run: Run, since: int) -> list[dict]:
        return run.events[max(since, 0):]   # seq N sits at index N-1

    def encoded_events_since(self, run: Run, since: int) -> bytes:
        """The events after seq `since` as JSON lines. A finished run's are its recording's bytes, encoded
        once as each event was recorded: encoding a 20,000-event log again took a second and more."""
        since = max(since, 0)
        if run.final:
            data = self._recording(run.id).events_bytes(len(run.events))
            if data is not None:
                return _lines_after(data, since)
        return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in run.events[since:]).encode()

    def _index(self, run: Run) -> dict:
        """The run's meta, as `list` will show it once the run has left memory; to be saved."""
        meta = self._recorded[run.id] = run.meta()
        return meta

    def _recording(self, run_id: str) -> Recording:
        if run_id not in self._recordings:
            self._recordings[run_id] = Recording(self.runs_dir, run_id)
        return self._recordings[run_id]


def _lines_after(data: bytes, skip: int) -> bytes:
    """`data` (whole lines) without its first `skip` lines."""
    at = 0
    for _ in range(skip):
        at = data.find(b"\n", at) + 1
        if at == 0:
            return b""
    return data[at:]
