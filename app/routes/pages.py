"""HTML pages: the lesson index and a lesson's live page. The page itself is ES modules in app/static/."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from app.deps import SettingsDep
from app.messages import Refusal, say
from app.rooms import normalise_code
from workers.lessons import LESSONS
from workers.lessons.course import course

router = APIRouter(tags=["pages"], include_in_schema=False)


def _max_ranks(request: Request, settings) -> int:
    """The most ranks the reader may start: the server's limit, a student's in the hosted lab (the
    form offers no world size the server would refuse them)."""
    from app.auth import auth_on
    user = request.scope.get("paralab_user")
    if auth_on(settings) and user is not None and not user.admin:
        return min(settings.MAX_RANKS, settings.MAX_RANKS_PER_STUDENT)
    return settings.MAX_RANKS


@router.get("/", response_class=HTMLResponse)
def index(request: Request):
    templates = request.app.state.templates
    return templates.TemplateResponse(request, "index.html", {"parts": course()})


@router.get("/lessons/{lesson_id}", response_class=HTMLResponse)
def lesson_page(request: Request, lesson_id: str, settings: SettingsDep):
    lesson = LESSONS.get(lesson_id)
    if lesson is None:
        raise Refusal(404, say("lesson.no_page", "no lesson '{lesson}'", lesson=lesson_id))
    templates = request.app.state.templates
    return templates.TemplateResponse(request, "lesson.html", {"lesson": lesson, "max_ranks": _max_ranks(request, settings)})


@router.get("/jobs/{run_id}", response_class=HTMLResponse)
def job_page(request: Request, run_id: str, settings: SettingsDep):
    """A job started outside the server (`paralab trace -- torchrun …`): its run, live, on the lesson
    page's views, with its ranks grouped by host (docs/torchrun.md)."""
    from app.auth import current_user, may_see
    run = request.app.state.manager.get(run_id)
    if run is None or run.lesson != "torchrun" or not may_see(current_user(request), run.owner):
        raise HTTPException(404, detail=f"no torchrun job with run id {run_id!r}")
    job = {"id": "torchrun", "title": f"torchrun job {run.params.get('job', '')}",
           "summary": f"{run.world_size} ranks started by torchrun, traced live into this server."}
    return request.app.state.templates.TemplateResponse(request, "job.html", {
        "lesson": job, "run": run.meta(), "max_ranks": max(run.world_size, settings.MAX_RANKS), "host": "job"})
@router.get("/playground", response_class=HTMLResponse)
def playground_page(request: Request, settings: SettingsDep):
    """One's own program: an editor with starting programs, a world size, Run, then the lesson page's
    panels (the `script` lesson; `?run=ID` shows a run, as `paralab run` prints)."""
    from workers.lessons.script import examples
    templates = request.app.state.templates
    return templates.TemplateResponse(request, "playground.html", {
        "lesson": LESSONS["script"], "max_ranks": _max_ranks(request, settings), "examples": examples()})


@router.get("/rooms/{code}", response_class=HTMLResponse, name="room_page")
def room_page(request: Request, code: str, settings: SettingsDep):
    """A lecture room: followers watch the presenter's run; the presenter (with the secret) drives.
    An unknown or expired code gets a page that says so (404); a code typed loosely (lower case,
    dashes) is sent on to the room's own address."""
    templates = request.app.state.templates
    room = request.app.state.rooms.get(code)
    if room is None:
        return templates.TemplateResponse(request, "room-missing.html",
                                          {"code": normalise_code(code)[:24], "title": "No such room"}, status_code=404)
    if code != room.code:
        return RedirectResponse(request.url_for("room_page", code=room.code), status_code=307)
    run = request.app.state.manager.get(room.run) if room.run else None
    lesson = LESSONS.get(room.view.get("lesson")) or (LESSONS.get(run.lesson) if run else None) or next(iter(LESSONS.values()))
    return templates.TemplateResponse(request, "room.html", {"code": room.code, "lessons": list(LESSONS.values()),
                                                             "lesson": lesson, "max_ranks": settings.MAX_RANKS, "host": "room"})


@router.get("/healthz")
def healthz(request: Request, settings: SettingsDep):
    """Liveness, the backend and the GPUs the launcher sees; `launcher`: ready, starting, or down (it
    died: the server is starting it again); with a Ray cluster, `cluster`: its nodes, CPUs (GPUs), free ones."""
    launcher = request.app.state.manager.launcher
    devices = launcher.info.get("devices") if launcher.ready else None
    backend = settings.BACKEND
    if backend == "auto":
        backend = "nccl" if devices else "gloo"
    cluster = request.app.state.manager.cluster
    return {"status": "ok", "backend": backend, "devices": devices,
            "launcher": launcher.state, **({"cluster": cluster.summary()} if cluster else {})}
