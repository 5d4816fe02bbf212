"""Parameter rules shared by several lessons (pydantic, torch-free)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationInfo

# Every field is bounded (a string by its length or its choices, a number by its range): a request
# can hold nothing larger than a lesson can use. tests/app/test_hostile_requests.py walks the schemas.
SEED_MAX = 2**32 - 1
RANK_MAX = 63

class LessonParams(BaseModel):
    """Base of every lesson's parameters: defaults are checked too (a default FFN may not divide
    the chosen number of ranks), and unknown parameters are refused rather than ignored."""

    model_config = ConfigDict(validate_default=True, extra="forbid", allow_inf_nan=False)


def world_size(info: ValidationInfo) -> int:
    return (info.context or {}).get("world_size", 1)


def divisible_by_ranks(value: int, info: ValidationInfo) -> int:
    """A dimension split across the ranks must divide evenly."""
    t = world_size(info)
    if value % t:
        raise ValueError(f"{info.field_name}={value} must be divisible by the number of ranks ({t})")
    return value
