"""Who is asking. With `PARALAB_AUTH=off` (the lecture mode) nobody signs in and every request may do
everything, as before. With `PARALAB_AUTH=on` (the hosted lab) a signed session cookie (Starlette's
SessionMiddleware, itsdangerous) names the user, their account's id (never reused: a deleted
account's cookie does not sign in a new account of the same name) and their session epoch (raised by
each password change and each sign-out, which so end older sessions), and `AuthGate` lets through only what is public:
the sign-in page and API, /healthz and the static files. Pages send a stranger to /login; the API
answers 401; a websocket is refused. `/admin` and `/api/admin/*` are for admins only, and so are the
direct judge (`POST /api/problems/{id}/judge`: students are judged through the fair queue) and
opening a lecture room (`POST /api/rooms`: a room's runs have no owner and no quota; staff present).
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from urllib.parse import quote

from starlette.requests import HTTPConnection, Request

from app.accounts import Accounts, User
from app.messages import Refusal, error_page, say, wants_a_page
from app.settings import Settings

LOCAL = User("local", "admin", None)     # the one user of the lecture mode: may do everything
SESSION_COOKIE = "paralab_session"

# external: its own token (routes/external.py); i18n: the sign-in page speaks the reader's language too
PUBLIC_PREFIXES = ("/static/", "/api/auth/", "/api/external/", "/api/i18n")
PUBLIC_PATHS = {"/healthz", "/login", "/favicon.ico"}


def secret_key(settings: Settings) -> str:
    """PARALAB_SECRET_KEY, or one generated at the first start and kept (mode 0600) in the data dir."""
    if settings.SECRET_KEY:
        return settings.SECRET_KEY
    path = Path(settings.DATA_DIR) / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(48))
    return path.read_text().strip()


def auth_on(settings: Settings) -> bool:
    return settings.AUTH == "on"


def current_user(connection: HTTPConnection) -> User:
    """The signed-in user; in the lecture mode, LOCAL. Set on the scope by AuthGate."""
    user = connection.scope.get("paralab_user")
    if user is None:
        if auth_on(connection.app.state.settings):
            raise Refusal(401, say("auth.sign_in_first", "sign in first"))
        return LOCAL
    return user


def require_admin(connection: HTTPConnection) -> User:
    user = current_user(connection)
    if not user.admin:
        raise Refusal(403, say("auth.admin_only", "only an admin may do this"))
    return user


def sign_in(connection: HTTPConnection, user: User) -> None:
    """A fresh session for `user`, valid until their password changes."""
    connection.session.clear()
    connection.session["user"] = user.name
    connection.session["uid"] = user.uid
    connection.session["epoch"] = user.session_epoch


def may_see(user: User, owner: str | None) -> bool:
    """A run or submission is its owner's and the admins'. A run with no owner (a lecture room's, which
    only staff open, or one recorded before accounts were on) is shown to everyone signed in."""
    return user.admin or owner is None or owner == user.name


class AuthGate:
    """Pure ASGI middleware, inside SessionMiddleware: puts the user on the scope, turns strangers away."""

    def __init__(self, app, accounts: Accounts):
        self.app, self.accounts = app, accounts

    def _signed_in(self, session: dict) -> User | None:
        """The session's user, unless the account is gone (a new account of the same name is another
        user: its id differs), or its password changed or it signed out since this session began."""
        name = session.get("user")
        user = self.accounts.user(name) if isinstance(name, str) else None
        if user is None or session.get("epoch", 0) != user.session_epoch or session.get("uid") != user.uid:
            return None
        return user

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        user = self._signed_in(scope.get("session") or {})
        scope["paralab_user"] = user
        path = scope["path"]
        if path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
            return await self.app(scope, receive, send)
        admin_only = (path == "/admin" or path.startswith("/api/admin/")
                      or (path.startswith("/api/problems/") and path.endswith("/judge"))
                      or (path == "/api/rooms" and scope.get("method") == "POST"))
        if user is not None and (user.admin or not admin_only):
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4401, "reason": "sign in first"})
            return
        status, message = ((403, say("auth.admin_only", "only an admin may do this")) if user
                           else (401, say("auth.sign_in_first", "sign in first")))
        if user is not None and wants_a_page(request := Request(scope)):   # signed in already: a sign-in form would not help
            return await error_page(request, 403, message.text, signed_in_as=user.name)(scope, receive, send)
        if path.startswith("/api/"):
            body = json.dumps(message.body()).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        else:
            target = scope.get("root_path", "") + "/login?next=" + quote(path + ("?" + scope["query_string"].decode() if scope.get("query_string") else ""), safe="")
            status, body = 303, b""
            headers = [(b"location", target.encode()), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
