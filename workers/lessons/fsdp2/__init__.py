from typing import Literal

from pydantic import Field, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, SEED_MAX, divisible_by_ranks


class Fsdp2Params(LessonParams):
    layers: int = Field(4, ge=1, le=16, description="layers in the model (each one FSDP unit)")
    hidden: int = Field(16, ge=1, le=256, description="width of each layer (split across ranks)")
    batch_per_rank: int = Field(4, ge=1, le=256, description="samples each rank trains on")
    steps: int = Field(2, ge=1, le=10, description="optimizer steps")
    seed: int = Field(0, ge=0, le=SEED_MAX)
    reshard_after_forward: bool = Field(True, description="free each layer's gathered weights after its forward "
                                                          "(and gather them again for backward)")
    prefetch: bool = Field(False, description="gather the next layer's weights before this layer computes")
    mistake: Literal["none", "rank_seeded_init"] = Field(
        "none", description="reproduce a classic bug: each rank initialises the model with its own seed")

    _hidden_divides = field_validator("hidden")(divisible_by_ranks)


LESSON = Lesson(
    id="fsdp2",
    title="FSDP2: torch's fully_shard",
    summary="torch's own fully_shard on the ZeRO lesson's model: each layer's weights all-gathered before "
            "its forward and backward, gradients reduce-scattered, reshard_after_forward and prefetching; "
            "each rank's memory over the step beside ZeRO-3's formula, parameters checked against one process.",
    params=Fsdp2Params,
    world_sizes=tuple(range(1, 9)),
    tags=("fsdp", "zero", "dtensor"),
)
