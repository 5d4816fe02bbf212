"""Starting a run from a request: every check, then the run. Shared by `POST /api/runs` and a room
presenter's `{"op": "run"}`, so both refuse the same input with the same words."""

from __future__ import annotations

import functools

from pydantic import ValidationError
from starlette import status

from app.messages import Message, refusal_body, say
from app.runs import QueueFull, Run, RunManager
from app.schemas import RunCreate
from app.settings import Settings
from app.validation import error_params
from workers.lessons import LESSONS


SCRIPT = "script"     # the lesson that runs the user's own program (workers/lessons/script); in the
                      # hosted lab its ranks run in the judge's sandbox (workers/sandboxed_run.py)


@functools.cache
def sandbox_available() -> bool:
    from workers import sandbox
    return sandbox.available()


class RunRejected(Exception):
    """Nothing was started; `detail` is FastAPI's validation-error list (each error with its `type` and
    `params`, the page's key), or a Message."""

    def __init__(self, status_code: int, detail: list | Message):
        super().__init__(detail)
        self.status, self.detail = status_code, detail

    def body(self) -> dict:
        return self.detail.body() if isinstance(self.detail, Message) else refusal_body(self.status, self.detail)


def _invalid(loc: list, message: Message) -> RunRejected:
    return RunRejected(status.HTTP_422_UNPROCESSABLE_CONTENT,
                       [{"loc": ["body", *loc], "msg": message.text, "type": message.code, "params": message.params}])


def _backend(settings: Settings, devices: int, world_size: int) -> str:
    if settings.BACKEND == "auto":
        return "nccl" if devices >= world_size else "gloo"
    if settings.BACKEND == "nccl" and devices < world_size:
        raise _invalid(["world_size"], say("run.nccl_needs_gpus", "NCCL needs one GPU per rank: {world_size} ranks, {devices} GPUs",
                                            world_size=world_size, devices=devices))
    return settings.BACKEND


PLACEMENTS = ("pack", "spread")


def _spans(sizes: list[int]) -> str:
    """`[1, 2, 3, 4, 8]` as "1–4, 8": a long run of world sizes read at a glance."""
    spans: list[list[int]] = []
    for n in sizes:
        if spans and n == spans[-1][-1] + 1:
            spans[-1].append(n)
        else:
            spans.append([n])
    return ", ".join(f"{s[0]}–{s[-1]}" if len(s) > 2 else ", ".join(map(str, s)) for s in spans)


def _placement(manager: RunManager, body: RunCreate) -> None:
    """`placement` is one of PLACEMENTS, and only means something on a Ray cluster."""
    if body.placement is None:
        return
    if body.placement not in PLACEMENTS:
        raise _invalid(["placement"], say("run.placement_unknown", "placement '{placement}' is not one of {known}",
                                          placement=body.placement, known=", ".join(PLACEMENTS)))
    if manager.cluster is None:
        raise _invalid(["placement"], say("run.placement_needs_cluster",
                                          "placement '{placement}' needs a Ray cluster; this server runs every rank "
                                          "on its own machine (start it with --cluster)", placement=body.placement))


def _quota(manager: RunManager, settings: Settings, body: RunCreate, user) -> None:
    """The hosted lab's limits on one user: runs in flight (queued or running), step-mode runs among
    them (each holds a run slot while it waits on a person), ranks for a student."""
    if not user.admin and body.world_size > settings.MAX_RANKS_PER_STUDENT:
        raise _invalid(["world_size"], say("lab.student_max_ranks", "a student may start at most {max} ranks",
                                            max=settings.MAX_RANKS_PER_STUDENT))
    mine = manager.in_flight(user.name)
    if mine >= settings.MAX_RUNS_PER_USER:
        raise RunRejected(status.HTTP_429_TOO_MANY_REQUESTS, say(
            "lab.runs_quota", "you have {runs} runs queued or running; the limit is {limit}",
            runs=mine, limit=settings.MAX_RUNS_PER_USER))
    stepping = manager.in_flight(user.name, step_only=True)
    if body.step and stepping >= settings.MAX_STEP_RUNS_PER_USER:
        raise RunRejected(status.HTTP_429_TOO_MANY_REQUESTS, say(
            "lab.step_runs_quota", "you have {runs} step-mode runs open; the limit is {limit} "
            "(cancel one, or let it continue to the end)", runs=stepping, limit=settings.MAX_STEP_RUNS_PER_USER))


async def start_run(manager: RunManager, settings: Settings, body: RunCreate, user=None,
                    room: str | None = None) -> Run:
    """`user`: the hosted lab's signed-in user (owner of the run, held to the quotas); None in the lecture mode.
    `room`: the lecture room whose presenter starts it (then only the presenter controls it).
    The quota is checked first (a refused user costs nothing more) and again right before the run is
    created: requests that arrive together each wait on the launcher's check in between."""
    if body.lesson == SCRIPT and room is not None:
        raise RunRejected(status.HTTP_403_FORBIDDEN,
                          "a lecture room runs the course's lessons: show your own program with `paralab run FILE.py`")
    if body.lesson == SCRIPT and user is not None and not sandbox_available():
        raise RunRejected(status.HTTP_503_SERVICE_UNAVAILABLE,
                          "your own program runs in the judge's sandbox, and bubblewrap is not available on this server")
    if user is not None:
        _quota(manager, settings, body, user)
    _placement(manager, body)
    lesson = LESSONS.get(body.lesson)
    if lesson is None:
        raise _invalid(["lesson"], say("run.unknown_lesson", "unknown lesson '{lesson}'; known: {known}",
                                       lesson=body.lesson, known=", ".join(LESSONS)))
    allowed = [n for n in lesson.world_sizes if n <= settings.MAX_RANKS]
    if body.world_size not in allowed:
        raise _invalid(["world_size"], say("run.world_size_not_allowed",
                                           "world_size {world_size} is not allowed for {lesson}; choose one of {allowed}",
                                           world_size=body.world_size, lesson=lesson.id, allowed=_spans(allowed)))
    try:
        params = lesson.validate(body.params, body.world_size)
    except ValidationError as exc:
        raise RunRejected(status.HTTP_422_UNPROCESSABLE_CONTENT, [
            {"loc": ["body", "params", *err["loc"]], "msg": err["msg"], "type": err["type"],
             "params": error_params(err.get("ctx"))}
            for err in exc.errors(include_url=False, include_input=False)])
    if lesson.runtime_rules:
        problems = await manager.launcher.check(lesson.id, body.world_size, params.model_dump())
        if problems:
            raise RunRejected(status.HTTP_422_UNPROCESSABLE_CONTENT, [
                {"loc": ["body", "params", field], "msg": message, "type": coded[0] if coded else "value_error",
                 "params": coded[1] if len(coded) > 1 else {}}
                for field, message, *coded in problems])
    backend = _backend(settings, manager.launcher.info.get("devices", 0), body.world_size)
    values = params.model_dump()
    if user is not None:      # again, with no await before `create`: counting and reserving are one step
        _quota(manager, settings, body, user)
    try:
        return manager.create(lesson.id, body.world_size, values, body.step, backend,
                              values.get("timeout_s") or body.hang_timeout_s, owner=user.name if user else None,
                              room=room, placement=body.placement)
    except QueueFull as exc:
        raise RunRejected(status.HTTP_503_SERVICE_UNAVAILABLE, say(
            "run.queue_full", "{queued} runs are already queued; try again shortly", queued=exc.queued))
