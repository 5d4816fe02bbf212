"""A lesson for the tests only (on PARALAB_LESSONS_PATH): a DTensor moved between placements by
torch's own `redistribute`, which no `dist.*` call makes — its collectives reach the page through the
tracer's dispatch level, with the mesh and the placements before and after."""

from workers.lessons import Lesson
from workers.lessons.params import LessonParams


class DTensorMovesParams(LessonParams):
    pass


LESSON = Lesson(id="dtensor_moves", title="DTensor placements (tests only)",
                summary="Shard(0) → Replicate(), then Partial() → Shard(0), by DTensor's redistribute.",
                params=DTensorMovesParams, world_sizes=(2, 4))
