"""A lesson for the tests only (on PARALAB_LESSONS_PATH): one rank fails in a chosen way (or just
prints, to stdout, where a careless runtime would corrupt its own pipes; or sends an event the
protocol does not allow, as a program writing its events by hand might)."""

from typing import Literal

from pydantic import Field

from workers.lessons import Lesson
from workers.lessons.params import LessonParams


class CrashParams(LessonParams):
    how: Literal["raise", "exit", "segfault", "hang", "print", "flood", "none",
                 "bytes_as_text", "unknown_kind", "unknown_field"] = "raise"   # the last three: a malformed event
    rank: int = Field(1, ge=0, le=63, description="the rank that fails")


LESSON = Lesson(id="crash", title="Crash (tests only)", summary="One rank fails.", params=CrashParams,
                world_sizes=tuple(range(1, 9)))
