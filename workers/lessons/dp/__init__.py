from pydantic import Field

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, SEED_MAX


class DpParams(LessonParams):
    bucketed: bool = Field(False, description="bucketed all-reduce launched during backward, instead of one after it")
    bucket_size: int = Field(600, ge=1, le=1_000_000, description="elements per bucket (bucketed only)")
    layers: int = Field(4, ge=1, le=16, description="layers in the model")
    hidden: int = Field(16, ge=1, le=256, description="width of each layer")
    batch_per_rank: int = Field(4, ge=1, le=256, description="samples each rank trains on")
    delay_ms: float = Field(5.0, ge=0, le=200, description="compute delay added to each layer's backward")
    seed: int = Field(0, ge=0, le=SEED_MAX)


LESSON = Lesson(
    id="dp",
    title="Data parallel: naive and bucketed",
    summary="Every rank trains a full copy on its own slice of the batch; gradients are averaged by "
            "all-reduce — after backward, or in buckets overlapping it. Parameters checked against one process.",
    params=DpParams,
    world_sizes=tuple(range(1, 9)),
)
