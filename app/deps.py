"""Typed dependencies that handlers declare."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from starlette.requests import HTTPConnection

from app.messages import Refusal, say
from app.runs import Run, RunManager
from app.settings import Settings


def get_manager(connection: HTTPConnection) -> RunManager:
    return connection.app.state.manager


def get_settings(connection: HTTPConnection) -> Settings:
    return connection.app.state.settings


RunManagerDep = Annotated[RunManager, Depends(get_manager)]
SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_run(run_id: str, manager: RunManagerDep, connection: HTTPConnection) -> Run:
    from app.auth import current_user, may_see
    run = manager.get(run_id)
    if run is None or not may_see(current_user(connection), run.owner):   # another user's run: 404 too
        raise Refusal(404, say("run.not_found", "no run with id '{run_id}'", run_id=run_id))
    return run


RunDep = Annotated[Run, Depends(get_run)]
