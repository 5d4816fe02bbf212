from typing import Literal

from pydantic import Field, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, SEED_MAX, divisible_by_ranks


class TpMlpParams(LessonParams):
    seq_len: int = Field(8, ge=1, le=256, description="S, tokens in the sequence")
    hidden: int = Field(16, ge=1, le=256, description="H, the model width")
    ffn: int = Field(64, ge=1, le=1024, description="FFN, the MLP's inner width (split across ranks)")
    seed: int = Field(0, ge=0, le=SEED_MAX, description="seed for the inputs and weights")
    mistake: Literal["none", "swap_f_g"] = Field(
        "none", description="reproduce a classic bug: f and g swapped")

    _ffn_divides = field_validator("ffn")(divisible_by_ranks)


LESSON = Lesson(
    id="tp_mlp",
    title="Tensor-parallel MLP",
    summary="Megatron's column/row split of an MLP: f and g as autograd functions, one all-reduce "
            "forward and one backward, every shard checked against one process.",
    params=TpMlpParams,
    world_sizes=tuple(range(1, 9)),
    sources=("program.py", "../mlp_block.py"),
)
