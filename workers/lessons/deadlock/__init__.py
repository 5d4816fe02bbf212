from typing import Literal

from pydantic import Field

from workers.lessons import Lesson
from workers.lessons.params import LessonParams


class DeadlockParams(LessonParams):
    bug: Literal["skip_collective", "op_mismatch", "shape_mismatch", "unmatched_send"] = Field(
        "skip_collective", description="the bug to run")
    timeout_s: float = Field(10.0, ge=1, le=120, description="seconds without progress before the run is called hung")


LESSON = Lesson(
    id="deadlock",
    title="The deadlock lab",
    summary="Four real bugs that hang distributed programs — a skipped collective, mismatched ops, "
            "mismatched shapes, an unmatched send — and the report that says which rank is stuck where, and why.",
    params=DeadlockParams,
    world_sizes=tuple(range(2, 9)),
)
