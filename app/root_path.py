"""Serving under a path that a proxy strips (PARALAB_ROOT_PATH; jupyter-server-proxy, docs/cluster.md).

Requests arrive without the path (`/static/css/paralab.css`). Two pure ASGI middlewares:

- `RootPath`, the outermost, tells every layer the path (`scope["root_path"]`): the pages write it
  (`root` in the templates), the sign-in redirect keeps it;
- `RoutedUnderRootPath`, the innermost, puts it back in front of `path` just before routing, as ASGI
  wants and Starlette's mounts (the static files) and `url_for` rely on. The guards between the two
  (the sign-in gate, the origin checks, the body limit) see the paths they always saw.
"""

from __future__ import annotations

__all__ = ["RootPath", "RoutedUnderRootPath"]


class RootPath:
    """Add it last, so that it runs first."""

    def __init__(self, app, root_path: str):
        self.app = app
        self.root_path = root_path

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, "root_path": self.root_path}
        await self.app(scope, receive, send)


class RoutedUnderRootPath:
    """Add it first, so that it runs last, just before routing."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        root = scope.get("root_path", "") if scope["type"] in ("http", "websocket") else ""
        if root:
            scope = {**scope, "path": root + scope["path"],
                     "raw_path": root.encode() + scope.get("raw_path", scope["path"].encode())}
        await self.app(scope, receive, send)
