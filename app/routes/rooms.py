"""Rooms: `POST /api/rooms` → `{code, secret}`; `WS /ws/rooms/{code}` for everyone, the presenter
adding `?secret=…`. See app/rooms.py for what a room holds and docs/api.md for the messages."""

from __future__ import annotations

import asyncio
import io
import json

import segno
from fastapi import APIRouter, HTTPException, Request, Response, WebSocket, WebSocketDisconnect, status
from pydantic import ValidationError
from starlette.requests import HTTPConnection

from app.deps import RunManagerDep, SettingsDep
from app.rooms import Room, RoomError, RoomManager
from app.routes.control import receive_control
from app.run_start import RunRejected, start_run
from app.schemas import RunCreate

router = APIRouter(tags=["rooms"])



def get_rooms(connection: HTTPConnection) -> RoomManager:
    return connection.app.state.rooms


def _room_or_404(rooms: RoomManager, code: str) -> Room:
    room = rooms.get(code)
    if room is None:
        raise HTTPException(404, detail=f"no room {code!r}: unknown or expired code")
    return room


@router.post("/api/rooms", status_code=status.HTTP_201_CREATED)
def create_room(request: Request):
    """Open a room: its `code` for followers, its `secret` for the presenter only."""
    room, secret = get_rooms(request).create()
    return {"code": room.code, "secret": secret, "follow_url": str(request.url_for("room_page", code=room.code))}


@router.get("/api/rooms/{code}")
def read_room(code: str, request: Request):
    """The room's state: current run, presenter's cursor and view, follower count."""
    rooms = get_rooms(request)
    return rooms.state(_room_or_404(rooms, code))


@router.get("/api/rooms/{code}/qr.svg")
def room_qr(code: str, request: Request):
    """A QR code of the room's follower URL, to put on the projector."""
    room = _room_or_404(get_rooms(request), code)
    buffer = io.BytesIO()
    segno.make(str(request.url_for("room_page", code=room.code)), error="m").save(
        buffer, kind="svg", scale=8, border=2, title=f"paralab room {room.code}")
    return Response(buffer.getvalue(), media_type="image/svg+xml")


@router.websocket("/ws/rooms/{code}")
async def room_socket(websocket: WebSocket, code: str, manager: RunManagerDep, settings: SettingsDep,
                      secret: str | None = None, run: str | None = None, since: int = 0):
    rooms = get_rooms(websocket)
    await websocket.accept()
    room = rooms.get(code)
    if room is None:
        await websocket.send_json({"error": f"no room {code!r}: unknown or expired code"})
        await websocket.close(code=4404)
        return
    presenter = secret is not None
    if presenter and not rooms.is_presenter(room, secret):
        await websocket.send_json({"error": "wrong presenter secret: this socket was not opened"})
        await websocket.close(code=4403)
        return
    if presenter:
        rooms.presenters[room.code] = rooms.presenters.get(room.code, 0) + 1
    try:
        async with rooms.hub.subscribe(rooms.topic(room)) as subscriber:
            since = since if run == room.run else 0          # a `since` of another run means nothing
            start = [rooms.state(room)] + rooms.backlog(room, since)
            sender = asyncio.create_task(_send(websocket, rooms, room, subscriber, start, since))
            try:
                await _receive(websocket, rooms, room, manager, settings, presenter)
            except WebSocketDisconnect:
                pass
            finally:
                sender.cancel()
    finally:
        if presenter:
            rooms.presenters[room.code] -= 1


async def _send(websocket: WebSocket, rooms: RoomManager, room: Room, subscriber, start: list[dict],
                since: int = 0):
    """The state, the current run's backlog, then live messages — each event once. A follower that
    resumed with `since` had the room's run up to there: a resync must not send that again."""
    last: dict[str, int] = {room.run: since} if room.run else {}
    current = room.run

    def now_showing(run_id: str | None):
        """A state naming another run: the client starts that run's log afresh, and the whole log
        follows — again, for a run shown before (A, B, then A again)."""
        nonlocal current
        if run_id != current:
            current = run_id
            if run_id:
                last[run_id] = 0

    async def send_event(message: dict, text: str | None = None):
        run_id, seq = message["run"], message["event"]["seq"]
        if seq <= last.get(run_id, 0):
            return
        last[run_id] = seq
        await websocket.send_text(text or json.dumps(message, separators=(",", ":")))

    for message in start:
        if message["type"] == "event":
            await send_event(message)
        else:
            await websocket.send_text(json.dumps(message, separators=(",", ":")))
    while True:
        text = await subscriber.queue.get()
        if subscriber.lagged:                               # too far behind: resync, never wait
            subscriber.drain()
            now_showing(room.run)
            await websocket.send_text(json.dumps(rooms.state(room), separators=(",", ":")))
            for message in rooms.backlog(room, last.get(room.run, 0)):
                await send_event(message)
            continue
        if text.startswith('{"type":"event"'):
            await send_event(json.loads(text), text)
        else:
            if text.startswith('{"type":"state"'):
                now_showing(json.loads(text)["run"])
            await websocket.send_text(text)


async def _receive(websocket, rooms: RoomManager, room: Room, manager, settings, presenter: bool):
    while True:
        message = await receive_control(websocket)
        if isinstance(message, str):
            error = message
        elif not presenter:
            error = "only the presenter drives this room: open it with the presenter secret"
        else:
            error = await _apply(rooms, room, manager, settings, message)
        if error:
            await websocket.send_json({"error": error})


async def _apply(rooms: RoomManager, room: Room, manager, settings, message: dict):
    """Carry out one presenter message; an error (a sentence, or a 422's detail list) or None."""
    op = message["op"]
    run = manager.get(room.run) if room.run else None
    try:
        if op == "run":
            body = RunCreate(**{k: v for k, v in message.items() if k != "op"})
            rooms.show_run(room, await start_run(manager, settings, body, room=room.code))
        elif op == "show":                               # a recorded run (reloaded from disk), any owner's:
            shown = manager.get(message["run"]) if isinstance(message.get("run"), str) else None
            if shown is None:                            # whoever has the secret is staff (an admin opened it)
                return f"no run with id {message.get('run')!r}"
            rooms.show_run(room, shown)
        elif op == "seek":
            rooms.seek(room, message.get("seq"))
        elif op == "step":
            by = message.get("by", 1)
            if isinstance(by, bool) or not isinstance(by, int):
                return "step needs an integer `by` (default 1)"
            rooms.step(room, by)
        elif op == "view":
            rooms.set_view(room, message.get("view"))
        elif op in ("release", "continue", "pause", "cancel"):
            if run is None:
                return "the room has no run yet"
            if op == "cancel":
                manager.cancel(run)
                return None
            control = {"op": "step", "rank": message.get("rank")} if op == "release" else {"op": op}
            return manager.control(run, {k: v for k, v in control.items() if v is not None})
        else:
            return f"unknown op {op!r}: use run, show, step, seek, view, release, continue, pause or cancel"
    except ValidationError as exc:                       # `loc` as the REST API words it
        return [{"loc": ["body", *err["loc"]], "msg": err["msg"], "type": err["type"]} for err in exc.errors()]
    except RunRejected as exc:
        return exc.detail
    except RoomError as exc:
        return str(exc)
    return None
