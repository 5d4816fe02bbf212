"""The hosted lab's cross-site request check (CSRF). The session cookie is SameSite=Lax, which keeps it
off most requests other sites' pages make — but not off those from another host of the same site
(`evil.uni.edu` against `lab.uni.edu`). So a request that carries the session cookie, changes
something (POST, PUT, PATCH, DELETE; and every websocket, whose messages start and cancel runs) and
says it comes from a page of another host is refused: 403, or a websocket closed with 4403.

Where it comes from is its `Origin` header, or lacking one its `Referer`; "another host" is one that
is neither the request's `Host` nor its `X-Forwarded-Host` (a reverse proxy's; a page cannot set it
across sites). A sign-in or sign-up is checked the same way even without a session cookie (login CSRF).
A request with neither header is let through: browsers send `Origin` on every
cross-origin POST and websocket, and scripts (curl, the tests' httpx) send none.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from app.messages import say

__all__ = ["CrossSiteGate", "cross_site_refusal"]

STATE_CHANGING = {"POST", "PUT", "PATCH", "DELETE"}
SIGN_IN_PATHS = {"/api/auth/login", "/api/auth/signup"}
DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}


def _url_host(url: str) -> str:
    """`host[:port]` of a URL, lower case, without its scheme's default port ("" for "null")."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return ""
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"                      # an IPv6 address, as a Host header writes it
    return host if port in (None, DEFAULT_PORTS.get(parts.scheme)) else f"{host}:{port}"


def _header_host(value: str) -> str:
    """A Host header, lower case, without a default port (which side of TLS it was is unknown)."""
    value = value.strip().lower()
    for port in (":80", ":443"):
        if value.endswith(port):
            return value[: -len(port)]
    return value


def cross_site_refusal(headers: Headers, session_cookie: str, signs_in: bool = False) -> str | None:
    """Why this request (one that changes something) must be refused as cross-site, or None.
    `signs_in`: a sign-in or sign-up, checked with or without a session (login CSRF: another site
    must not sign a visitor in to an account of its choosing)."""
    if not signs_in and session_cookie not in cookie_parser(headers.get("cookie", "")):
        return None
    source = headers.get("origin") or headers.get("referer")
    if source is None:
        return None
    ours = {_header_host(h) for h in (headers.get("host", ""), headers.get("x-forwarded-host", "").split(",")[0]) if h}
    if _url_host(source) in ours:
        return None
    kind = "Origin" if headers.get("origin") else "Referer"
    return say("auth.cross_site", "cross-site request refused: its {header} ({source}) is not this server "
               "({host}); use the lab's own pages", header=kind, source=source[:200], host=headers.get("host", "?"))


class CrossSiteGate:
    """Pure ASGI middleware, installed only with PARALAB_AUTH=on."""

    def __init__(self, app, session_cookie: str):
        self.app, self.session_cookie = app, session_cookie

    async def __call__(self, scope, receive, send):
        checked = scope["type"] == "websocket" or (scope["type"] == "http" and scope["method"] in STATE_CHANGING)
        signs_in = scope.get("path") in SIGN_IN_PATHS
        refusal = cross_site_refusal(Headers(scope=scope), self.session_cookie, signs_in) if checked else None
        if refusal is None:
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4403, "reason": refusal.text[:120]})
            return
        body = json.dumps(refusal.body()).encode()
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
