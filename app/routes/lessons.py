"""Lessons: what can be run, with the schema of each lesson's parameters."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from app.deps import RunManagerDep
from app.launcher import Launcher, LauncherError
from app.messages import Refusal, say
from app.schemas import LessonDetail, LessonPublic
from workers.lessons import LESSONS, Lesson
from workers.lessons.explain_steps import split_markers

router = APIRouter(prefix="/api/lessons", tags=["lessons"])


def lesson_public(lesson: Lesson, choices: dict[str, list] | None = None) -> dict:
    """`choices`: values only the launcher knows (it has torch), by field, added to the schema as enums."""
    schema = lesson.params.model_json_schema()
    for field, values in (choices or {}).items():
        schema["properties"][field]["enum"] = values
    return {"id": lesson.id, "title": lesson.title, "summary": lesson.summary,
            "params": schema, "world_sizes": list(lesson.world_sizes),
            "default_world_size": lesson.default_world_size, "texts": lesson.texts(),
            "defaults_by_world_size": {str(n): d for n in lesson.world_sizes if (d := lesson.params.defaults_for(n))}}


async def known_choices(launcher: Launcher, lesson: Lesson) -> dict[str, list]:
    """The lesson's values only torch knows; none while the launcher starts or if it cannot answer (the
    schema then has no enum, and the launcher still checks a run's values)."""
    if lesson.runtime_rules is None or not launcher.ready:
        return {}
    try:
        return await launcher.choices(lesson.id)
    except LauncherError:
        return {}


@router.get("", response_model=list[LessonPublic])
async def read_lessons(manager: RunManagerDep):
    """Every lesson, with its parameters' JSON schema and allowed world sizes."""
    choices = {lesson.id: await known_choices(manager.launcher, lesson) for lesson in LESSONS.values()}
    return await run_in_threadpool(lambda: [lesson_public(lesson, choices[lesson.id]) for lesson in LESSONS.values()])


@router.get("/{lesson_id}", response_model=LessonDetail)
async def read_lesson(lesson_id: str, manager: RunManagerDep,
                      lang: Annotated[str, Query(max_length=16, pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$",
                                                 description="a language code: en, zh, …")] = "en"):
    """One lesson, with the source files the page shows and its explanation."""
    lesson = LESSONS.get(lesson_id)
    if lesson is None:
        raise Refusal(404, say("lesson.not_found", "no lesson '{lesson}'; known: {known}", lesson=lesson_id, known=", ".join(LESSONS)))
    choices = await known_choices(manager.launcher, lesson)
    return await run_in_threadpool(_lesson_detail, lesson, choices, lang)   # its files read


def _lesson_detail(lesson: Lesson, choices: dict[str, list], lang: str) -> dict:
    sources = [{"path": path, "text": text} for path, text in lesson.source_files()]
    explanation, steps = split_markers(lesson.explanation(lang))
    return {**lesson_public(lesson, choices), "sources": sources, "explanation": explanation, "explanation_steps": steps}
