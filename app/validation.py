"""Refusing bad input with a 422 that names the field, whatever the input held. FastAPI's own
handler echoes each wrong value back (`input`, `ctx`): a NaN, an Infinity or a lone surrogate in it
cannot be written as JSON, and the refusal became a 500. This one says what is wrong and where,
without the value."""

from __future__ import annotations

import math

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse


def refusal(errors) -> list[dict]:
    """Each error's `loc`, `msg`, `type` and `params` (pydantic's `ctx`: the bound broken, `ge`, `max_length`…,
    the page's key to translate `msg` by `type`): always encodable (a `loc` part may be a bad key)."""
    return [{"loc": [part if isinstance(part, int) else _printable(str(part)) for part in err.get("loc", ())],
             "msg": _printable(str(err.get("msg", ""))), "type": str(err.get("type", "")),
             "params": error_params(err.get("ctx"))} for err in errors]


def error_params(ctx) -> dict:
    """pydantic's `ctx` as JSON can carry it: finite numbers and short strings (an exception as its text)."""
    params = {}
    for name, value in (ctx or {}).items():
        if isinstance(value, bool) or (isinstance(value, (int, float)) and math.isfinite(value)):
            params[name] = value
        elif isinstance(value, (list, tuple)):
            params[name] = _printable(", ".join(map(str, value)))
        else:
            params[name] = _printable(str(value))
    return params


def _printable(text: str) -> str:
    """At most 200 characters, with anything UTF-8 cannot carry (a lone surrogate) replaced."""
    return text[:200].encode("utf-8", "replace").decode("utf-8")


async def request_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    return JSONResponse({"detail": refusal(exc.errors()), "code": "validation", "params": {}}, status_code=422)
