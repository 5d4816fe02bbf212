"""Reading one control message from a websocket, the same way for run and room sockets."""

from __future__ import annotations

import json

from fastapi import WebSocket, WebSocketDisconnect

from app.messages import Message, say

MAX_CONTROL_BYTES = 4096


async def receive_control(websocket: WebSocket) -> dict | Message:
    """The next control message as a dict with an "op", or the sentence refusing it.
    Raises WebSocketDisconnect when the client has gone."""
    received = await websocket.receive()
    if received["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(received.get("code", 1000))
    text = received.get("text")
    if text is None:
        return say("control.not_text", 'a control message is a JSON object with an "op", sent as text')
    if len(text.encode()) > MAX_CONTROL_BYTES:
        return say("control.too_large", "control message too large (at most {max_bytes} bytes)", max_bytes=MAX_CONTROL_BYTES)
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):            # RecursionError: nested too deep to parse
        message = None
    if not isinstance(message, dict) or "op" not in message:
        return say("control.not_an_op", 'a control message is a JSON object with an "op"')
    return message
