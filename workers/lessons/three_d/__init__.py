from typing import Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, SEED_MAX, rule, world_size


class ThreeDParams(LessonParams):
    tp: int = Field(2, ge=1, le=8, description="tensor-parallel degree (inside each stage)")
    pp: int = Field(2, ge=1, le=8, description="pipeline stages")
    dp: int = Field(2, ge=1, le=8, description="data-parallel replicas")
    microbatches: int = Field(4, ge=1, le=32, description="m, microbatches per replica")
    hidden: int = Field(8, ge=1, le=128, description="model width")
    ffn: int = Field(16, ge=1, le=512, description="MLP inner width (split across tp)")
    seed: int = Field(0, ge=0, le=SEED_MAX, description="seed for the inputs and weights")
    mistake: Literal["none", "sync_every_microbatch", "sync_before_last_backward"] = Field(
        "none", description="where the DP gradient sync goes wrong inside a pipeline")

    @classmethod
    def defaults_for(cls, world_size: int) -> dict:
        """tp × pp × dp filling `world_size` ranks, as even a grid as the other defaults allow (8: 2 × 2 × 2,
        4: 2 × 2 × 1; ffn=16 takes no tp of 3, 4 microbatches no pp of 5); ties go to tp, then pp."""
        grids = [(tp, pp, world_size // (tp * pp)) for tp in range(1, world_size + 1)
                 for pp in range(1, world_size // tp + 1) if world_size % (tp * pp) == 0]
        fitting = [grid for grid in grids if _fits(cls, dict(zip(GRID, grid)), world_size)]
        best = min(fitting, key=lambda grid: (max(grid) - min(grid), [-n for n in grid]), default=None)
        return dict(zip(GRID, best)) if best else {}

    @field_validator("dp")
    @classmethod
    def _grid_fills_world(cls, value: int, info: ValidationInfo) -> int:
        tp, pp, n = info.data.get("tp", 1), info.data.get("pp", 1), world_size(info)
        if tp * pp * value != n:
            raise rule("three_d.grid_fills_ranks", "tp × pp × dp = {tp} × {pp} × {dp} = {product} must equal the "
                       "number of ranks ({ranks})", tp=tp, pp=pp, dp=value, product=tp * pp * value, ranks=n)
        return value

    @field_validator("microbatches")
    @classmethod
    def _enough_microbatches(cls, value: int, info: ValidationInfo) -> int:
        if value < info.data.get("pp", 1):
            raise rule("three_d.microbatches_cover_stages", "1F1B needs at least as many microbatches as stages: "
                       "{value} < pp={pp}", value=value, pp=info.data["pp"])
        return value

    @field_validator("mistake")
    @classmethod
    def _mistake_needs_replicas(cls, value: str, info: ValidationInfo) -> str:
        dp = info.data.get("dp")
        if value != "none" and dp == 1:
            raise rule("three_d.mistake_needs_dp", "mistake={value} misplaces the data-parallel gradient sync: it needs "
                       "dp ≥ 2 (with dp=1 there is no other replica to average with, so nothing can go wrong)", value=value)
        return value

    @field_validator("ffn")
    @classmethod
    def _ffn_splits(cls, value: int, info: ValidationInfo) -> int:
        if value % info.data.get("tp", 1):
            raise rule("three_d.ffn_splits", "ffn={value} must be divisible by tp={tp}", value=value, tp=info.data["tp"])
        return value


GRID = ("tp", "pp", "dp")


def _fits(params: type[LessonParams], values: dict, world_size: int) -> bool:
    try:
        params.model_validate(values, context={"world_size": world_size})
    except ValidationError:
        return False
    return True


LESSON = Lesson(
    id="three_d",
    title="3D parallel: TP × PP × DP",
    summary="One training step composing all three: TP inside each stage, a 1F1B schedule between stages, "
            "the DP gradient sync after — the process-group grid lit up as each group communicates.",
    params=ThreeDParams,
    world_sizes=tuple(range(1, 9)),
    default_world_size=8,   # tp × pp × dp = 2 × 2 × 2
    sources=("program.py", "../pp/engine.py", "../tp_mlp/program.py"),
)
