"""Step mode from the server's side: a person's `step` [rank], `continue` and `pause`, passed to the
ranks' gates (workers/gate.py) over their event channels, at most CONTROL_RATE_PER_S a second."""

from __future__ import annotations

import json
import time

from app.run import Run
from app.messages import Message, say
from app.run_store import RunStore
from app.settings import Settings
from workers.protocol import Run as RunEvent


class StepControl:
    def __init__(self, settings: Settings, store: RunStore):
        self.settings = settings
        self.store = store

    def apply(self, run: Run, message: dict) -> Message | None:
        """Apply a control message (`step` [rank], `continue`, `pause`); the refusal, or None."""
        op = message.get("op")
        if run.final:
            return say("run.ended", "run {run_id} has ended", run_id=run.id)
        if not self._allowed(run):
            return say("control.too_many", "too many control messages for run {run_id}: at most {rate} a second",
                       run_id=run.id, rate=self.settings.CONTROL_RATE_PER_S)
        if op == "step":
            rank = message.get("rank")
            if rank is None:
                targets = sorted(run.waiting)
            elif isinstance(rank, bool) or not isinstance(rank, int) or rank not in run.waiting:
                return say("control.not_waiting", "rank {rank} is not waiting at a gate", rank=str(rank)[:32])
            else:
                targets = [rank]
            for released in targets:          # released now: a second "step" must not release it again
                run.waiting.pop(released, None)
            _tell(run, targets, {"release": True})
        elif op in ("continue", "pause"):
            stepping = op == "pause"
            _tell(run, sorted(run.writers), {"stepping": stepping})
            if stepping != run.stepping:     # said again, it changes nothing: the log does not grow
                run.stepping = stepping
                self.store.record(run, RunEvent(t=run.now(), status="running", stepping=stepping).to_dict())
        else:
            return say("control.unknown_op", "unknown control op '{op}'", op=str(op)[:64])
        return None

    def _allowed(self, run: Run) -> bool:
        """A token bucket per run: CONTROL_RATE_PER_S messages a second, bursts of twice that."""
        rate = self.settings.CONTROL_RATE_PER_S
        now = time.monotonic()
        allowance = 2 * rate if run.control_allowance is None else run.control_allowance
        allowance = min(2 * rate, allowance + (now - run.last_control_at) * rate)
        run.last_control_at = now
        if allowance < 1:
            run.control_allowance = allowance
            return False
        run.control_allowance = allowance - 1
        return True


def _tell(run: Run, ranks: list[int], message: dict) -> None:
    line = (json.dumps(message) + "\n").encode()
    for rank in ranks:
        writer = run.writers.get(rank)
        if writer is not None and not writer.is_closing():
            writer.write(line)
