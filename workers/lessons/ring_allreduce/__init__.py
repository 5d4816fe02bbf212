from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, rule, world_size


class RingAllreduceParams(LessonParams):
    algorithm: Literal["both", "ring", "recursive_doubling"] = Field(
        "both", description="ring, recursive doubling, or both one after the other (doubling needs 2ᵏ ranks)")
    size: int | None = Field(None, ge=1, le=4096, description="elements per rank (default: two per rank)")

    @field_validator("algorithm")
    @classmethod
    def _doubling_needs_power_of_two(cls, value: str, info: ValidationInfo) -> str:
        p = world_size(info)
        if value == "recursive_doubling" and p & (p - 1):
            raise rule("ring_allreduce.doubling_needs_power_of_two", "recursive doubling pairs ranks r and r XOR 2ᵏ: "
                       "it needs a power-of-two number of ranks, not {ranks}", ranks=p)
        return value

    @field_validator("size")
    @classmethod
    def _size_splits(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and value % world_size(info):
            raise rule("ring_allreduce.size_splits", "the ring cuts the tensor into one chunk per rank: size={value} "
                       "must be divisible by the number of ranks ({ranks})", value=value, ranks=world_size(info))
        return value


LESSON = Lesson(
    id="ring_allreduce",
    title="Ring all-reduce by hand",
    summary="All-reduce built from send/recv: a reduce-scatter then an all-gather around a ring, 2(p−1) "
            "steps of one chunk each, beside recursive doubling's log₂p steps — checked against the plain sum of the inputs.",
    params=RingAllreduceParams,
    world_sizes=tuple(range(2, 17)),
)
