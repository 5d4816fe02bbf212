from typing import Literal

from pydantic import Field, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, SEED_MAX, divisible_by_ranks


class SpMlpParams(LessonParams):
    seq_len: int = Field(8, ge=1, le=256, description="S, tokens in the sequence (split across ranks)")
    hidden: int = Field(16, ge=1, le=256, description="H, the model width")
    ffn: int = Field(64, ge=1, le=1024, description="FFN, the MLP's inner width (split across ranks)")
    seed: int = Field(0, ge=0, le=SEED_MAX, description="seed for the inputs and weights")
    mistake: Literal["none", "forget_ln_allreduce"] = Field(
        "none", description="reproduce a classic bug: the LayerNorm weight gradient all-reduce forgotten")

    _seq_divides = field_validator("seq_len")(divisible_by_ranks)
    _ffn_divides = field_validator("ffn")(divisible_by_ranks)


LESSON = Lesson(
    id="sp_mlp",
    title="Sequence-parallel LayerNorm + MLP",
    summary="Megatron's sequence parallelism: LayerNorm on S/t tokens, all-gather entering and "
            "reduce-scatter leaving the tensor-parallel region, and the LayerNorm gradient's all-reduce.",
    params=SpMlpParams,
    world_sizes=tuple(range(1, 9)),
    sources=("program.py", "../mlp_block.py"),
)
