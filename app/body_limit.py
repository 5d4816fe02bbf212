"""Request bodies are capped before anything parses them: a body over MAX_BODY_BYTES is answered 413
as soon as its `Content-Length` (or, streamed without one, its bytes so far) says so. A 10 MB JSON
body used to hold the event loop for seconds while it was parsed."""

from __future__ import annotations

import json
from app.messages import Message, say

__all__ = ["BodyLimit"]


class BodyLimit:
    """Pure ASGI middleware, outermost. A body within the limit is read here and handed on whole."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.max_bytes:
            return await self._refuse(send, say("http.bad_content_length", "Content-Length is not a number") if not declared.isdigit() else None)
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                return await self._refuse(send)
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()          # after the body: wait for the client to go
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, send, reason: Message | None = None) -> None:
        message = reason or say("http.body_too_large", "the request body is too large: at most {max_bytes} bytes",
                                max_bytes=self.max_bytes)
        body = json.dumps(message.body()).encode()
        await send({"type": "http.response.start", "status": 413 if reason is None else 400,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})
