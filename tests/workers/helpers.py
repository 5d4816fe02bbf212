"""Small helpers the worker tests share."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from workers.protocol import encode, frame_length

REPO = Path(__file__).resolve().parents[2]


def here() -> str:
    """`file:line` of the caller, as the tracer's `site` names it."""
    frame = sys._getframe(1)
    return f"{Path(frame.f_code.co_filename).resolve().relative_to(REPO)}:{frame.f_lineno}"


def on_the_wire(message: dict) -> dict:
    """A message as the server reads it (encoded then decoded, so a later change to a dict already
    sent does not show): its line, and for a blob's frame the raw values after it."""
    line, _, rest = encode(message).partition(b"\n")
    read = json.loads(line)
    if frame_length(read) is not None:
        read["data"] = rest
    return read
