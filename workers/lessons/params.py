"""Parameter rules shared by several lessons (pydantic, torch-free)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationInfo
from pydantic_core import PydanticCustomError

# Every field is bounded (a string by its length or its choices, a number by its range): a request
# can hold nothing larger than a lesson can use. tests/app/test_hostile_requests.py walks the schemas.
SEED_MAX = 2**32 - 1
RANK_MAX = 63

class LessonParams(BaseModel):
    """Base of every lesson's parameters: defaults are checked too (a default FFN may not divide
    the chosen number of ranks), and unknown parameters are refused rather than ignored."""

    model_config = ConfigDict(validate_default=True, extra="forbid", allow_inf_nan=False)

    @classmethod
    def defaults_for(cls, world_size: int) -> dict:
        """Defaults that depend on the number of ranks, over the fields' own (none here; 3D
        parallelism's grid must fill its ranks). A run that omits them gets them, and the page's form
        shows them when that number is chosen."""
        return {}


def world_size(info: ValidationInfo) -> int:
    return (info.context or {}).get("world_size", 1)


def rule(code: str, english: str, **ctx) -> PydanticCustomError:
    """A broken parameter rule: its `code` (the 422's `type`, the key a lesson's texts.<lang>.json
    translates under `errors`), the English with `{name}` from `ctx` (the 422's `params`)."""
    return PydanticCustomError(code, english, ctx)


def divisible_by_ranks(value: int, info: ValidationInfo) -> int:
    """A dimension split across the ranks must divide evenly."""
    t = world_size(info)
    if value % t:
        raise rule("params.divisible_by_ranks", "{field}={value} must be divisible by the number of ranks ({ranks})",
                   field=info.field_name, value=value, ranks=t)
    return value
