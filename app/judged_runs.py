"""A judged submission's run, recorded as every run is (app/recording.py), so that its owner can
step through it on the playground's page (`/playground?run=ID`, the `script` lesson in replay): the
ranks' events as the judge took them from the sandbox (workers/judge_events.py), then the verdict's
checks, between the run's own `running` and how it ended. The run is the submission's owner's: the
run routes show it to them and to the admins only, as every run (app/deps.py)."""

from __future__ import annotations

import time

from app.messages import run_error, say
from workers.judge_events import SHOWN_AS
from workers.protocol import Check, Run

__all__ = ["judged_run_id", "judged_run"]

SCRIPT = "script"


def judged_run_id(submission_id: str) -> str:
    return f"judged-{submission_id}"


def judged_run(submission: dict, verdict, world_size: int) -> tuple[dict, list[dict]]:
    """(the run's meta, its numbered events) for a submission the judge has answered."""
    ranks = verdict.events
    end = max((event["t"] for event in ranks), default=0.0)
    failed = verdict.status == "refused" or bool(verdict.reason)
    error = run_error("judge", say("judge.verdict", "{reason}", reason=verdict.reason)) if failed and verdict.reason else None
    events = [Run(t=0.0, status="running", backend="gloo").to_dict(), *ranks,
              *(_check_event(check, end) for check in verdict.checks),
              Run(t=end, status="failed" if failed else "done", error=error).to_dict()]
    numbered = [{"seq": seq, "rank": event.pop("rank", None), **event} for seq, event in enumerate(events, 1)]
    meta = {"id": judged_run_id(submission["id"]), "lesson": SCRIPT, "world_size": world_size,
            "params": {"source": submission["code"], "args": [], "filename": SHOWN_AS},
            "step": False, "backend": "gloo", "created_at": submission.get("created_at") or time.time(),
            "owner": submission["user"], "room": None, "hang_timeout_s": None,
            "status": "failed" if failed else "done", "error": error, "event_count": len(numbered),
            "submission": submission["id"], "problem": submission["problem"]}
    return meta, numbered


def _check_event(check: dict, t: float) -> dict:
    """The verdict's check as the run's check event: on the first failing rank, with what differed."""
    failure = check.get("first_failure") or {}
    rank = failure.get("rank") if isinstance(failure.get("rank"), int) else 0
    fields = {key: failure[key] for key in ("max_abs_err", "differences", "expected", "performed") if key in failure}
    return Check(rank=rank, t=t, name=check["name"], passed=check["passed"], detail=check.get("detail") or "",
                 **fields).to_dict()
