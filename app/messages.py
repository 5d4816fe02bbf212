"""What the server says to a person, as a stable `code` with `params` beside the English.

The page translates by the code (`t(code, params)`, docs/i18n.md); outside clients keep reading the
English (`detail`, `message`, `error`), which is the same template filled in. Every code and its params
are listed in docs/api.md; tests/app/test_messages.py keeps that list and the code in step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException


@dataclass(frozen=True)
class Message:
    code: str
    english: str                       # the template, `{name}` filled from params
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.english.format(**{k: _english(v) for k, v in self.params.items()})

    def body(self, text_key: str = "detail") -> dict:
        """The English under `text_key`, with `code` and `params` beside it (as JSON: a nested message
        in params becomes {code, params, message})."""
        return {text_key: self.text, "code": self.code, "params": _plain(self.params)}

    def __str__(self) -> str:
        return self.text


def say(code: str, english: str, /, **params) -> Message:
    """The message `code` with its English template; params may have any name (a room's `code` too)."""
    return Message(code, english, params)


class Refusal(HTTPException):
    """An HTTP refusal with its code: the body is {"detail": English, "code", "params"}."""

    def __init__(self, status_code: int, message: Message, headers: dict | None = None):
        super().__init__(status_code, detail=message.text, headers=headers)
        self.message = message


def refusal_body(status_code: int, detail) -> dict:
    """The JSON body of a refusal that has no Message of its own (Starlette's 404 and 405, a list of
    validation errors): its code is `http.<status>`, or `validation` for a list."""
    return {"detail": detail, "code": "validation" if isinstance(detail, list) else f"http.{status_code}", "params": {}}


async def http_error(request: Request, exc: StarletteHTTPException):
    message = getattr(exc, "message", None)
    body = message.body() if isinstance(message, Message) else refusal_body(exc.status_code, exc.detail)
    if exc.status_code in (204, 304):
        return JSONResponse(None, status_code=exc.status_code, headers=exc.headers)
    if exc.status_code in PAGE_TITLES and wants_a_page(request):
        return error_page(request, exc.status_code, body.get("detail") or "")
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


PAGE_TITLES = {403: "Not for this account", 404: "Not found"}


def wants_a_page(request) -> bool:
    """A browser asking for a page (not the API, which always answers JSON)."""
    return not request.url.path.startswith(("/api/", "/ws/")) and "text/html" in request.headers.get("accept", "")


def error_page(request, status_code: int, message: str, signed_in_as: str | None = None):
    return request.app.state.templates.TemplateResponse(request, "error.html", {
        "title": PAGE_TITLES[status_code], "message": message, "signed_in_as": signed_in_as}, status_code=status_code)


def _english(value):
    """A param as the English shows it: a nested message (a Message, or one already as JSON) by its text,
    a list of them joined by "; "."""
    if isinstance(value, Message):
        return value.text
    if isinstance(value, dict) and "code" in value and "message" in value:
        return value["message"]
    if isinstance(value, list) and value and all(isinstance(v, (Message, dict)) for v in value):
        return "; ".join(_english(v) for v in value)
    return value


def _plain(value):
    if isinstance(value, Message):
        return {"code": value.code, "params": _plain(value.params), "message": value.text}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def run_error(kind: str, message: Message, **fields) -> dict:
    """A failed run's `error`: its kind, the English `message`, its `code` and `params`, and other fields."""
    return {"kind": kind, **message.body("message"), **fields}


def socket_error(error: Message | list) -> dict:
    """A refusal on a websocket: {"error": English (or a 422's list), "code", "params"}."""
    return error.body("error") if isinstance(error, Message) else {"error": error, "code": "validation", "params": {}}
