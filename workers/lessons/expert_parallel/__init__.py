from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, rule, world_size


class ExpertParallelParams(LessonParams):
    experts: int = Field(2, ge=1, le=4, description="experts on each rank (E = experts × ranks in all)")
    top_k: int = Field(2, ge=1, le=4, description="k, the experts each token is sent to")
    tokens: int = Field(8, ge=1, le=64, description="T, tokens on each rank")
    hidden: int = Field(8, ge=1, le=64, description="H, the model width")
    ffn: int = Field(16, ge=1, le=128, description="FFN, each expert's inner width")
    capacity_factor: float = Field(1.25, ge=0.1, le=16.0,
                                   description="cf: an expert takes at most ⌈cf·T·k/E⌉ of a rank's tokens")
    skewed_router: bool = Field(False, description="bias the router towards the first experts (imbalance)")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="seed for the tokens and weights")
    mistake: Literal["none", "combine_wrong_order"] = Field(
        "none", description="reproduce a classic bug: results combined back in the wrong order")

    @field_validator("top_k")
    @classmethod
    def _at_most_every_expert(cls, value: int, info: ValidationInfo) -> int:
        experts = info.data.get("experts", 1) * world_size(info)
        if value > experts:
            raise rule("expert_parallel.top_k_too_large", "top_k={value} must be at most the number of experts "
                       "E = experts × ranks = {experts}: a token picks k different experts", value=value, experts=experts)
        return value


LESSON = Lesson(
    id="expert_parallel",
    title="Expert parallelism: a mixture of experts",
    summary="A top-k mixture-of-experts layer with its experts spread over the ranks: tokens dispatched "
            "with an uneven all-to-all, computed, combined back; capacity, dropped tokens and the load "
            "per expert and per rank beside their formulas, every number checked against one process.",
    params=ExpertParallelParams,
    world_sizes=tuple(range(1, 9)),
    sources=("program.py", "reference.py"),
    tags=("moe", "all_to_all"),
)
