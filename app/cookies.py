"""The session cookie's `Secure` flag. Behind an HTTPS proxy the server itself speaks plain HTTP, so
SessionMiddleware cannot know to set it; with PARALAB_SECURE_COOKIES=auto it is set when the request
came over HTTPS, as the scope says (behind a proxy in PARALAB_TRUSTED_PROXIES, its X-Forwarded-Proto);
`on` sets it always, `off` never."""

from __future__ import annotations

__all__ = ["SecureCookies"]


class SecureCookies:
    """Pure ASGI middleware, outside SessionMiddleware: adds `; Secure` to the cookies it sets."""

    def __init__(self, app, mode: str):
        self.app, self.mode = app, mode

    async def __call__(self, scope, receive, send):
        secure = self.mode == "on" or (self.mode == "auto" and scope.get("scheme") in ("https", "wss"))
        if scope["type"] != "http" or not secure:
            return await self.app(scope, receive, send)

        async def send_secure(message):
            if message["type"] == "http.response.start":
                message["headers"] = [(name, value + b"; secure" if name.lower() == b"set-cookie"
                                       and b"; secure" not in value.lower() else value)
                                      for name, value in message.get("headers", [])]
            await send(message)

        await self.app(scope, receive, send_secure)
