"""A lesson for the tests only (on PARALAB_LESSONS_PATH), unknown to the front end: its events alone
choose the page's panels. `collectives` makes collectives only; `everything` adds send/recv, pipeline
stage actions (compute with a stage and microbatch), tensor snapshots and a metric with its formula."""

from typing import Literal

from workers.lessons import Lesson
from workers.lessons.params import LessonParams


class EveryKindParams(LessonParams):
    makes: Literal["everything", "collectives"] = "everything"


LESSON = Lesson(id="every_kind", title="Every kind of event (tests only)",
                summary="Collectives, send/recv, pipeline stage actions and tensor snapshots.",
                params=EveryKindParams, world_sizes=(2,))
