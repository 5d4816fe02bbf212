"""A learner's progress through the course, kept per account in the hosted lab (PARALAB_AUTH=on):
which lessons they ran to the end and which self-check questions they opened, so another browser
shows the same. A save adds to what is kept, never removes (progress.js merges both ways). In the
lecture mode there are no accounts: progress stays in the browser and these answer 404."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, Field, field_validator

from app.accounts import User
from app.auth import auth_on, current_user
from workers.lessons import LESSONS

router = APIRouter(prefix="/api/progress", tags=["progress"])

MAX_QUESTIONS = 50


class LessonProgress(BaseModel):
    ran: bool = Field(False, description="a run of the lesson was seen to its end")
    answered: list[Annotated[int, Field(ge=0, lt=MAX_QUESTIONS)]] = Field(
        default_factory=list, max_length=MAX_QUESTIONS, description="the self-check questions opened (0-based)")
    questions: int = Field(0, ge=0, le=MAX_QUESTIONS, description="how many self-check questions the lesson has")


class ProgressUpdate(BaseModel):
    lessons: dict[str, LessonProgress] = Field(description="lesson id -> its progress, as this browser saw it")

    @field_validator("lessons")
    @classmethod
    def known_lessons(cls, lessons: dict) -> dict:
        unknown = sorted(set(lessons) - set(LESSONS))
        if unknown:
            raise ValueError(f"no lesson {unknown[0][:64]!r}; known: {', '.join(LESSONS)}")
        return lessons


def signed_in_learner(request: Request) -> User:
    if not auth_on(request.app.state.settings):
        raise HTTPException(404, detail="progress is kept per account only in the hosted lab (PARALAB_AUTH=on); "
                                        "here it stays in the browser")
    return current_user(request)


LearnerDep = Annotated[User, Depends(signed_in_learner)]


@router.get("")
def read_progress(user: LearnerDep, request: Request) -> dict:
    """The signed-in learner's progress, lesson by lesson, and whose it is (`user`: a browser keeps
    one account's progress, never hands it to the next account signed in there)."""
    return {"user": user.name, "lessons": request.app.state.accounts.progress(user.name)}


@router.put("")
def update_progress(body: ProgressUpdate, user: LearnerDep, request: Request) -> dict:
    """Add this browser's progress to the account's; the merged progress comes back."""
    seen = {lesson: p.model_dump() for lesson, p in body.lessons.items()}
    return {"lessons": request.app.state.accounts.merge_progress(user.name, seen)}
