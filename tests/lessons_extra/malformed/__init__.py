"""A lesson for the tests only (on PARALAB_LESSONS_PATH): one rank sends an event the protocol does not
allow, as a program that wrote its events by hand might."""

from typing import Literal

from pydantic import Field

from workers.lessons import Lesson
from workers.lessons.params import LessonParams


class MalformedParams(LessonParams):
    what: Literal["bytes_as_text", "unknown_kind", "unknown_field"] = "bytes_as_text"
    rank: int = Field(1, ge=0, description="the rank that sends it")


LESSON = Lesson(id="malformed", title="Malformed event (tests only)", summary="One rank breaks the protocol.",
                params=MalformedParams, world_sizes=tuple(range(1, 9)))
