"""Small helpers the worker tests share."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def here() -> str:
    """`file:line` of the caller, as the tracer's `site` names it."""
    frame = sys._getframe(1)
    return f"{Path(frame.f_code.co_filename).resolve().relative_to(REPO)}:{frame.f_lineno}"
