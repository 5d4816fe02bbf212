from pydantic import Field, ValidationInfo, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, RANK_MAX, SEED_MAX, rule, world_size


class PpParams(LessonParams):
    schedule: str = Field("1f1b", max_length=32, pattern=r"^[A-Za-z0-9_]+$", description=(
        "gpipe or 1f1b: paralab's own engine; or a schedule torch ships (GPipe, 1F1B, Interleaved1F1B, …)"),
        json_schema_extra={"x-enum-groups": {"paralab's own engine (engine.py)": ["gpipe", "1f1b"]},
                           "x-enum-rest": "torch.distributed.pipelining"})
    microbatches: int = Field(8, ge=1, le=32, description="m, microbatches per step")
    virtual_stages: int = Field(1, ge=1, le=4, description="stages per rank (interleaved and V schedules)")
    delay_ms: float = Field(20.0, ge=0, le=200, description="compute delay of each forward (backward: twice)")
    slow_stage: int | None = Field(None, ge=0, le=RANK_MAX, description="a straggler: this stage's compute is 3× slower")
    hidden: int = Field(16, ge=1, le=256, description="width of each layer")
    seed: int = Field(0, ge=0, le=SEED_MAX)

    @field_validator("slow_stage")
    @classmethod
    def _slow_stage_exists(cls, value: int | None, info: ValidationInfo) -> int | None:
        stages = world_size(info) * info.data.get("virtual_stages", 1)
        if value is not None and value >= stages:
            raise rule("pp.slow_stage_not_a_stage", "slow_stage={value} is not a stage: stages are 0..{last}",
                       value=value, last=stages - 1)
        return value


LESSON = Lesson(
    id="pp",
    title="Pipeline parallel, live",
    summary="An MLP stack cut into stages across ranks, trained on microbatches by GPipe, 1F1B or any "
            "schedule torch ships: each rank's timeline, the bubbles, the activations held, against the ideal grid.",
    params=PpParams,
    world_sizes=tuple(range(2, 9)),
    sources=("program.py", "engine.py", "schedules.py"),
    runtime_rules="workers.lessons.pp.schedules",
)
