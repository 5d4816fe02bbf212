from typing import Literal

from pydantic import Field, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, SEED_MAX, divisible_by_ranks


class DTensorParams(LessonParams):
    rows: int = Field(8, ge=1, le=64, description="rows of the tensor redistributed (split across ranks)")
    cols: int = Field(8, ge=1, le=64, description="columns of the tensor redistributed (split across ranks)")
    plan: Literal["tensor_parallel", "sequence_parallel"] = Field(
        "tensor_parallel", description="the MLP block's plan: W1 colwise, W2 rowwise (as tp_mlp); "
                                       "with the LayerNorm sequence-parallel too (as sp_mlp)")
    seq_len: int = Field(8, ge=1, le=256, description="S, tokens in the sequence")
    hidden: int = Field(16, ge=1, le=256, description="H, the model width")
    ffn: int = Field(64, ge=1, le=1024, description="FFN, the MLP's inner width (split across ranks)")
    seed: int = Field(0, ge=0, le=SEED_MAX, description="seed for the tensors and weights")
    mistake: Literal["none", "both_colwise"] = Field(
        "none", description="reproduce a classic bug: a wrong placement plan, both linears colwise")

    _rows_divide = field_validator("rows")(divisible_by_ranks)
    _cols_divide = field_validator("cols")(divisible_by_ranks)
    _ffn_divides = field_validator("ffn")(divisible_by_ranks)
    _seq_divides = field_validator("seq_len")(divisible_by_ranks)


LESSON = Lesson(
    id="dtensor",
    title="DTensor: placements and parallelize_module",
    summary="A tensor placed as Shard, Replicate and Partial on a 1-D and a 2-D device mesh, each "
            "redistribute with the collective it makes and its bytes; then parallelize_module with "
            "ColwiseParallel, RowwiseParallel and SequenceParallel on the tp_mlp/sp_mlp block, checked "
            "against the same single-process numbers.",
    params=DTensorParams,
    world_sizes=tuple(range(1, 9)),
    sources=("program.py", "../mlp_block.py"),
    tags=("dtensor", "tensor_parallel"),
)
