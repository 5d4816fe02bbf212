"""Runs: start one, read its state, its events, its tensors and its trace; cancel it."""

from __future__ import annotations

import math
import sys
from array import array

from fastapi import APIRouter, HTTPException, Request, Response, status
from fastapi.responses import JSONResponse

from app.auth import auth_on, current_user
from app.deps import RunDep, RunManagerDep, SettingsDep
from app.local_origin import code_run_refusal
from app.messages import Refusal, say
from app.run_start import SCRIPT, RunRejected, start_run
from app.runs import Run
from app.schemas import RunCreate, RunPublic
from app.trace import chrome_trace

router = APIRouter(prefix="/api/runs", tags=["runs"])


def run_public(run: Run) -> RunPublic:
    return RunPublic(id=run.id, lesson=run.lesson, world_size=run.world_size, params=run.params,
                     step=run.step, backend=run.backend, status=run.status,
                     position=run.position if run.status == "queued" else None, error=run.error,
                     created_at=run.created_at, hang_timeout_s=run.hang_timeout_s, events=len(run.events), checks=run.checks,
                     metrics=run.metrics, placement=run.placement)


@router.post("", status_code=status.HTTP_201_CREATED, response_model=RunPublic)
async def create_run(body: RunCreate, manager: RunManagerDep, settings: SettingsDep, request: Request):
    """Start a lesson on fresh ranks; invalid input gets a 422 naming the field and starts nothing.
    In the hosted lab the run is the user's, within their quotas (429 past them). A run of one's own
    program (`"lesson": "script"`) in the single-user mode must come as JSON by a safe name (app/local_origin.py)."""
    if body.lesson == SCRIPT and not auth_on(settings):
        refused = code_run_refusal(request.headers, settings.ALLOWED_HOSTS)
        if refused:
            raise HTTPException(refused[0], detail=refused[1])
    try:
        run = await start_run(manager, settings, body, user=current_user(request) if auth_on(settings) else None)
    except RunRejected as exc:
        return JSONResponse(exc.body(), status_code=exc.status)
    return run_public(run)


@router.get("", response_model=list[dict])
def read_runs(manager: RunManagerDep, request: Request, limit: int = 50):
    """Recent runs, newest first (in the hosted lab, a student's own)."""
    user = current_user(request)
    if user.admin:
        return manager.list(limit)
    return manager.list(limit, owner=user.name)


@router.get("/{run_id}", response_model=RunPublic)
def read_run(run: RunDep):
    """A run's status, error, checks and metrics."""
    return run_public(run)


@router.get("/{run_id}/events")
def read_events(run: RunDep, manager: RunManagerDep, since: int = 0):
    """The recorded events after `seq` `since`, as JSON lines."""
    return Response(manager.encoded_events_since(run, since), media_type="application/x-ndjson")


@router.get("/{run_id}/tensors/{tensor_id}")
def read_tensor(run: RunDep, tensor_id: str, manager: RunManagerDep):
    """One full tensor by the `id` of its preview: shape, dtype and its values, flat, row-major."""
    blob = manager.tensor(run, tensor_id)
    if blob is None:
        raise Refusal(404, say("run.no_tensor", "no tensor '{tensor}' in run {run_id}", tensor=tensor_id, run_id=run.id))
    values = array("f", blob["data"])
    if sys.byteorder != "little":
        values.byteswap()
    finite = [v if math.isfinite(v) else str(v) for v in values.tolist()]   # JSON has no NaN/Infinity
    return {"id": tensor_id, "shape": blob["shape"], "dtype": blob["dtype"], "values": finite}


@router.get("/{run_id}/trace.json")
def read_trace(run: RunDep):
    """The run in Chrome trace format: open it in Perfetto (ui.perfetto.dev) or chrome://tracing."""
    return chrome_trace(run.id, run.events)


@router.get("/{run_id}/schedule")
def read_schedule(run: RunDep):
    """A pipeline run's ideal grid: one list per rank of torch's action strings ("2F0", "1B3"),
    None where the rank is idle, with the schedule's notes and ideal bubble fraction."""
    for event in run.events:
        if event.get("kind") == "schedule":
            return {key: event[key] for key in ("schedule", "grid", "notes", "placement", "bubble_fraction")}
    raise Refusal(404, say("run.not_pipeline", "run {run_id} is not a pipeline run, or has not started", run_id=run.id))


@router.delete("/{run_id}", response_model=RunPublic)
def delete_run(run: RunDep, manager: RunManagerDep, request: Request, secret: str | None = None):
    """Cancel a queued or running run: its ranks are stopped at once. A lecture room's run: only
    with the room's presenter secret (`?secret=…`), else 403."""
    refusal = request.app.state.rooms.control_refusal(run, secret)
    if refusal:
        raise Refusal(403, refusal)
    manager.cancel(run)
    return run_public(run)
