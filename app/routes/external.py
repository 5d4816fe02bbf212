"""Jobs started outside the server: the ranks of a `torchrun` job join its run and post their events
(docs/torchrun.md). Only programs may call these: a request that says it comes from a web page (it has
an `Origin` or a `Referer`, which browsers add and a rank never sends) is refused, so a page the user
visits cannot inject a run into 127.0.0.1. With PARALAB_TRACE_TOKEN set, joining needs it
(`Authorization: Bearer …`); in the hosted lab (PARALAB_AUTH=on) external runs are refused without it."""

from __future__ import annotations

import hmac
import time
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, Field
from starlette.requests import HTTPConnection

from app.auth import auth_on
from app.deps import SettingsDep
from app.external_runs import ExternalRuns, Job
from workers.job_sender import MAX_SCRIPT_CHARS
from workers.protocol import decode, decode_stream

router = APIRouter(prefix="/api/external", tags=["external jobs"])


def refuse_pages(request: Request) -> None:
    source = request.headers.get("origin") or request.headers.get("referer")
    if source is not None:
        raise HTTPException(403, detail=(f"a web page ({source[:200]}) may not feed a run: only a job's ranks may, "
                                         "and they send no Origin"))


def get_external(connection: HTTPConnection) -> ExternalRuns:
    return connection.app.state.external


ExternalDep = Annotated[ExternalRuns, Depends(get_external)]


class JobJoin(BaseModel):
    job: str = Field(min_length=1, max_length=256, description="the job's id: torchrun's run id and restart")
    world_size: int = Field(ge=1, le=65536)
    rank: int = Field(ge=0)
    node: int = Field(0, ge=0, description="torchrun's node rank (GROUP_RANK)")
    host: str = Field("?", max_length=256)
    member: str = Field("", max_length=64, description="the rank's process, so that a join sent twice joins once")
    script: JobScript | None = Field(None, description="the file the job runs, for its page's Source panel")


class JobScript(BaseModel):
    path: str = Field(min_length=1, max_length=4096, description="the file as the job's events' sites name it")
    text: str = Field(max_length=MAX_SCRIPT_CHARS)


class Goodbye(BaseModel):
    token: str
    rank: int = Field(ge=0)
    sent: int = Field(0, ge=0)
    dropped: int = Field(0, ge=0)
    stopped: str | None = Field(None, max_length=32, description="the signal that stopped the rank, if one did")


def _check_trace_token(request: Request, settings) -> None:
    if not settings.TRACE_TOKEN:
        if auth_on(settings):
            raise HTTPException(403, detail="this hosted lab takes no external jobs (PARALAB_TRACE_TOKEN is not set)")
        return
    given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(given.encode(), settings.TRACE_TOKEN.encode()):
        raise HTTPException(401, detail="this server needs its trace token: set PARALAB_TOKEN for the job's ranks")


def _job(external: ExternalRuns, run_id: str, token: str) -> Job:
    job = external.job(run_id)
    if job is None or not hmac.compare_digest(str(token).encode(), job.run.token.encode()):
        raise HTTPException(410, detail=f"run {run_id} is not an open external run (it ended, or the token is wrong)")
    return job


@router.get("/clock", dependencies=[Depends(refuse_pages)])
async def read_clock():
    """The server's monotonic clock, in seconds: a rank measures its host's offset against it."""
    return {"now": time.monotonic()}


@router.post("/join", dependencies=[Depends(refuse_pages)])
async def join_job(body: JobJoin, external: ExternalDep, settings: SettingsDep, request: Request):
    """A rank joins its job's run (its first rank opens it): the run's id, token and page."""
    _check_trace_token(request, settings)
    if body.rank >= body.world_size:
        raise HTTPException(422, detail=f"rank {body.rank} is not below the world size {body.world_size}")
    run = external.join(body.job, body.world_size, body.rank, body.member, owner=settings.ADMIN_USER if auth_on(settings) else None,
                        script=body.script.model_dump() if body.script else None)
    return {"run": run.id, "token": run.token, "page": f"/jobs/{run.id}"}


@router.post("/runs/{run_id}/events", dependencies=[Depends(refuse_pages)])
async def post_events(run_id: str, external: ExternalDep, request: Request):
    """A batch of one rank's messages, as JSON lines after a first line saying who sends them:
    `{"token", "rank", "node", "host", "clock": {"offset", "rtt"}, "backend"?}`."""
    try:
        first, _, rest = (await request.body()).partition(b"\n")
        header = decode(first)
        messages = decode_stream(rest)   # JSON lines, and blob frames (a line, then raw values)
        rank, node = int(header["rank"]), int(header.get("node", 0))
        clock = {"offset": float(header["clock"]["offset"]), "rtt": float(header["clock"]["rtt"])}
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise HTTPException(400, detail=f"a batch is a header line then one JSON message a line: {exc}")
    job = _job(external, run_id, header.get("token", ""))
    if not 0 <= rank < job.run.world_size:
        raise HTTPException(422, detail=f"rank {rank} is not in this job of {job.run.world_size} ranks")
    external.take(job, rank, node, str(header.get("host", "?"))[:256], clock, messages, header.get("backend"))
    return {"taken": len(messages)}


@router.post("/runs/{run_id}/goodbye", dependencies=[Depends(refuse_pages)])
async def say_goodbye(run_id: str, body: Goodbye, external: ExternalDep):
    """A rank has finished: how many events it sent and dropped."""
    job = _job(external, run_id, body.token)
    if body.rank >= job.run.world_size:
        raise HTTPException(422, detail=f"rank {body.rank} is not in this job of {job.run.world_size} ranks")
    external.goodbye(job, body.rank, body.sent, body.dropped, body.stopped)
    return {"status": job.run.status}
