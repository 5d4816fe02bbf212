"""Serving under a path that a proxy strips (PARALAB_ROOT_PATH; jupyter-server-proxy, docs/cluster.md).

Requests arrive without the path (`/static/css/paralab.css`); ASGI wants `path` to hold `root_path`,
and Starlette's mounts (the static files) and `url_for` rely on it. So the innermost middleware puts
the path back in front, just before routing; the guards outside it (the sign-in gate, the origin
checks, the body limit) see the paths they always saw. FastAPI's own `root_path` gives every layer
`scope["root_path"]`, which the pages (`root` in the templates) and the sign-in redirect use.
"""

from __future__ import annotations

__all__ = ["RootPath"]


class RootPath:
    """Pure ASGI middleware: add it first, so that it runs last, just before routing."""

    def __init__(self, app, root_path: str):
        self.app = app
        self.root_path = root_path

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, "root_path": self.root_path, "path": self.root_path + scope["path"],
                     "raw_path": self.root_path.encode() + scope.get("raw_path", scope["path"].encode())}
        await self.app(scope, receive, send)
