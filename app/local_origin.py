"""The single-user server's guard against other web pages. With PARALAB_AUTH off, a run of the user's
own program (`lesson: "script"`) is code run as the user: a page of any site the user visits must
not be able to start one on `http://127.0.0.1:8000`. Browsers let such a page send a request there
(a `fetch` with `mode: "no-cors"` and a text/plain body, a form POST, a websocket); they mark it
with an `Origin` header naming the page's site, which no page can leave out or forge. So:

- every request that changes something (POST, PUT, PATCH, DELETE) and every websocket whose `Origin`
  (or, lacking one, `Referer`) is not this server is refused: 403, or a websocket closed with 4403;
- a script run must say it is JSON (`Content-Type: application/json`, which a cross-site request
  cannot send without the server's CORS consent, never given) and must reach the server by a name
  an attacker's DNS cannot point here (DNS rebinding): an IP address, `localhost`, or a name in
  PARALAB_ALLOWED_HOSTS.

Scripts (curl, `paralab run`, the tests) send no `Origin`; they pass. The hosted lab (PARALAB_AUTH=on)
has its own cross-site check (app/csrf.py).
"""

from __future__ import annotations

import ipaddress
import json

from starlette.datastructures import Headers

from app.csrf import STATE_CHANGING, _header_host, _url_host   # one reading of Host and Origin for both guards

__all__ = ["LocalOriginGate", "foreign_origin_refusal", "code_run_refusal"]


def foreign_origin_refusal(headers: Headers) -> str | None:
    """Why a request from another page must be refused, or None (same origin, or no browser page)."""
    source = headers.get("origin") or headers.get("referer")
    if source is None:
        return None
    if _url_host(source) == _header_host(headers.get("host", "")):
        return None
    kind = "Origin" if headers.get("origin") else "Referer"
    return (f"refused: this request comes from another web page (its {kind} is {source[:200]}), and this "
            f"paralab server runs code as its user; use its own pages, or a script with no Origin header")


def _host_name(host_header: str) -> str:
    host = _header_host(host_header)
    if host.startswith("["):
        return host[1:host.find("]")]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def reachable_by_a_safe_name(host_header: str, allowed: set[str]) -> bool:
    """An IP address, localhost, or a name the operator listed: not a name someone else's DNS controls."""
    name = _host_name(host_header)
    if name in ("localhost", *allowed) or "*" in allowed:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def code_run_refusal(headers: Headers, allowed_hosts: str) -> tuple[int, str] | None:
    """(status, why) when a run of the user's own code must be refused in the single-user mode."""
    media_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        return 415, (f"a run of your own program must be sent as JSON (Content-Type: application/json), "
                     f"not {media_type or 'without a Content-Type'}")
    allowed = {name.strip().lower() for name in allowed_hosts.split(",") if name.strip()}
    if not reachable_by_a_safe_name(headers.get("host", ""), allowed):
        return 403, (f"refused: this server was reached as {headers.get('host', '?')[:100]!r}, a name that is not "
                     f"an IP address or localhost (a DNS-rebinding page could use it); use http://127.0.0.1, or "
                     f"list the name in PARALAB_ALLOWED_HOSTS")
    return None


class LocalOriginGate:
    """Pure ASGI middleware, installed with PARALAB_AUTH off."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        checked = scope["type"] == "websocket" or (scope["type"] == "http" and scope["method"] in STATE_CHANGING)
        refusal = foreign_origin_refusal(Headers(scope=scope)) if checked else None
        if refusal is None:
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4403, "reason": refusal.encode()[:120].decode(errors="ignore")})
            return
        body = json.dumps({"detail": refusal}).encode()
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
