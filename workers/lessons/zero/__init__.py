from typing import Literal

from pydantic import Field

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, SEED_MAX


class ZeroParams(LessonParams):
    stage: Literal[1, 2, 3] = Field(1, description="1: optimizer state sharded; 2: + gradients; 3: + parameters")
    layers: int = Field(4, ge=1, le=16, description="layers in the model")
    hidden: int = Field(16, ge=1, le=256, description="width of each layer")
    batch_per_rank: int = Field(4, ge=1, le=256, description="samples each rank trains on")
    steps: int = Field(2, ge=1, le=10, description="optimizer steps")
    seed: int = Field(0, ge=0, le=SEED_MAX)


LESSON = Lesson(
    id="zero",
    title="ZeRO: sharding optimizer state, gradients and parameters",
    summary="ZeRO stages 1–3 on real ranks: each rank's measured memory for parameters, gradients and "
            "Adam's state beside the formulas, the elements communicated per step against 2Ψ and 3Ψ.",
    params=ZeroParams,
    world_sizes=tuple(range(1, 9)),
)
