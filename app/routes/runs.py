"""Runs: start one, read its state, its events, its tensors and its trace; cancel it."""

from __future__ import annotations

import base64
import json
import math
import sys
from array import array

from fastapi import APIRouter, HTTPException, Response, status
from pydantic import ValidationError

from app.deps import RunDep, RunManagerDep, SettingsDep
from app.runs import QueueFull, Run
from app.schemas import RunCreate, RunPublic
from app.trace import chrome_trace
from workers.lessons import LESSONS

router = APIRouter(prefix="/api/runs", tags=["runs"])


def _invalid(loc: list, message: str) -> HTTPException:
    """A 422 shaped like FastAPI's own validation errors, naming the field."""
    return HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT,
                         detail=[{"loc": ["body", *loc], "msg": message, "type": "value_error"}])


def run_public(run: Run) -> RunPublic:
    return RunPublic(id=run.id, lesson=run.lesson, world_size=run.world_size, params=run.params,
                     step=run.step, backend=run.backend, status=run.status, error=run.error,
                     created_at=run.created_at, events=len(run.events), checks=run.checks,
                     metrics=run.metrics)


def _backend(settings, devices: int, world_size: int) -> str:
    if settings.BACKEND == "auto":
        return "nccl" if devices >= world_size else "gloo"
    if settings.BACKEND == "nccl" and devices < world_size:
        raise _invalid(["world_size"], f"NCCL needs one GPU per rank: {world_size} ranks, {devices} GPUs")
    return settings.BACKEND


@router.post("", status_code=status.HTTP_201_CREATED, response_model=RunPublic)
async def create_run(body: RunCreate, manager: RunManagerDep, settings: SettingsDep):
    """Start a lesson on fresh ranks; invalid input gets a 422 naming the field and starts nothing."""
    lesson = LESSONS.get(body.lesson)
    if lesson is None:
        raise _invalid(["lesson"], f"unknown lesson {body.lesson!r}; known: {', '.join(LESSONS)}")
    allowed = [n for n in lesson.world_sizes if n <= settings.MAX_RANKS]
    if body.world_size not in allowed:
        raise _invalid(["world_size"], f"world_size {body.world_size} is not allowed for {lesson.id}; "
                                       f"choose one of {allowed}")
    try:
        params = lesson.validate(body.params, body.world_size)
    except ValidationError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=[
            {"loc": ["body", "params", *err["loc"]], "msg": err["msg"], "type": err["type"]}
            for err in exc.errors(include_url=False, include_context=False, include_input=False)])
    if lesson.runtime_rules:
        problems = await manager.launcher.check(lesson.id, body.world_size, params.model_dump())
        if problems:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=[
                {"loc": ["body", "params", field], "msg": message, "type": "value_error"}
                for field, message in problems])
    backend = _backend(settings, manager.launcher.info.get("devices", 0), body.world_size)
    try:
        values = params.model_dump()
        hang_timeout = values.get("timeout_s") or body.hang_timeout_s
        run = manager.create(lesson.id, body.world_size, values, body.step, backend, hang_timeout)
    except QueueFull as exc:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, detail=str(exc))
    return run_public(run)


@router.get("", response_model=list[dict])
def read_runs(manager: RunManagerDep, limit: int = 50):
    """Recent runs, newest first."""
    return manager.list(limit)


@router.get("/{run_id}", response_model=RunPublic)
def read_run(run: RunDep):
    """A run's status, error, checks and metrics."""
    return run_public(run)


@router.get("/{run_id}/events")
def read_events(run: RunDep, manager: RunManagerDep, since: int = 0):
    """The recorded events after `seq` `since`, as JSON lines."""
    lines = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in manager.events_since(run, since))
    return Response(lines, media_type="application/x-ndjson")


@router.get("/{run_id}/tensors/{tensor_id}")
def read_tensor(run: RunDep, tensor_id: str, manager: RunManagerDep):
    """One full tensor by the `id` of its preview: shape, dtype and its values, flat, row-major."""
    blob = manager.tensor(run, tensor_id)
    if blob is None:
        raise HTTPException(404, detail=f"no tensor {tensor_id!r} in run {run.id}")
    values = array("f", base64.b64decode(blob["data"]))
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
    raise HTTPException(404, detail=f"run {run.id} is not a pipeline run, or has not started")


@router.delete("/{run_id}", response_model=RunPublic)
def delete_run(run: RunDep, manager: RunManagerDep):
    """Cancel a queued or running run: its ranks are stopped at once."""
    manager.cancel(run)
    return run_public(run)
