from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, RANK_MAX, rule, world_size

OPS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
       "scatter", "gather", "send_recv", "barrier")
SPLIT_OPS = ("reduce_scatter", "all_to_all", "scatter")   # their tensor is cut into one chunk per rank


class CollectivesParams(LessonParams):
    op: Literal[OPS] = Field("all_reduce", description="the collective to run")
    reduce_op: Literal["sum", "avg", "max"] = Field("sum", description="how reduce and all_reduce combine")
    root: int = Field(0, ge=0, le=RANK_MAX, description="the root rank of broadcast, reduce, scatter and gather")
    size: int | None = Field(None, ge=1, le=4096, description=(
        "elements in each rank's tensor (default: two per rank)"))
    sweep: bool = Field(False, description="also time the collective over a sweep of sizes and fit the α–β model")

    @field_validator("root")
    @classmethod
    def _root_is_a_rank(cls, value: int, info: ValidationInfo) -> int:
        if value >= world_size(info):
            raise rule("collectives.root_not_a_rank", "root={value} is not a rank: ranks are 0..{last}",
                       value=value, last=world_size(info) - 1)
        return value

    @field_validator("size")
    @classmethod
    def _size_splits(cls, value: int | None, info: ValidationInfo) -> int | None:
        op, ranks = info.data.get("op"), world_size(info)
        if value is not None and op in SPLIT_OPS and value % ranks:
            raise rule("collectives.size_splits", "{op} cuts the tensor into one chunk per rank: size={value} "
                       "must be divisible by the number of ranks ({ranks})", op=op, value=value, ranks=ranks)
        return value


LESSON = Lesson(
    id="collectives",
    title="Every collective, step by step",
    summary="broadcast, reduce, all-reduce, all-gather, reduce-scatter, all-to-all, scatter, gather, "
            "send/recv and barrier on small integer tensors: who sends what, and where each number ends up.",
    params=CollectivesParams,
    world_sizes=tuple(range(2, 17)),
    sources=("program.py", "expected.py", "../../cost_model.py"),
)
