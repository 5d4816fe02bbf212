"""Parameter rules shared by several lessons (pydantic, torch-free)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationInfo


class LessonParams(BaseModel):
    """Base of every lesson's parameters: defaults are checked too (a default FFN may not divide
    the chosen number of ranks), and unknown parameters are refused rather than ignored."""

    model_config = ConfigDict(validate_default=True, extra="forbid")


def world_size(info: ValidationInfo) -> int:
    return (info.context or {}).get("world_size", 1)


def divisible_by_ranks(value: int, info: ValidationInfo) -> int:
    """A dimension split across the ranks must divide evenly."""
    t = world_size(info)
    if value % t:
        raise ValueError(f"{info.field_name}={value} must be divisible by the number of ranks ({t})")
    return value
