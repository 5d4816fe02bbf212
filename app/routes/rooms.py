"""Rooms: `POST /api/rooms` → `{code, secret}`; `WS /ws/rooms/{code}` for everyone, the presenter
adding `?secret=…`. See app/rooms.py for what a room holds and docs/api.md for the messages."""

from __future__ import annotations

import asyncio
import io
import json
from functools import partial

import segno
from fastapi import APIRouter, Request, Response, WebSocket, WebSocketDisconnect, status
from pydantic import ValidationError
from starlette.requests import HTTPConnection

from app.deps import RunManagerDep, SettingsDep
from app.log_follower import LogFollower, follow
from app.messages import Message, Refusal, say, socket_error
from app.rooms import Room, RoomError, RoomManager, event_message
from app.routes.control import receive_control
from app.run_start import RunRejected, start_run
from app.schemas import RunCreate
from app.validation import refusal

router = APIRouter(tags=["rooms"])



def get_rooms(connection: HTTPConnection) -> RoomManager:
    return connection.app.state.rooms


def _room_or_404(rooms: RoomManager, code: str) -> Room:
    room = rooms.get(code)
    if room is None:
        raise Refusal(404, say("room.not_found", "no room '{code}': unknown or expired code", code=code))
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
        await websocket.send_json(socket_error(say("room.not_found", "no room '{code}': unknown or expired code", code=code)))
        await websocket.close(code=4404)
        return
    presenter = secret is not None
    if presenter and not rooms.is_presenter(room, secret):
        await websocket.send_json(socket_error(say("room.wrong_secret", "wrong presenter secret: this socket was not opened")))
        await websocket.close(code=4403)
        return
    if presenter:
        rooms.presenters[room.code] = rooms.presenters.get(room.code, 0) + 1
    try:
        async with _follow_room(rooms, room, run, since) as events:
            state = rooms.state(room)                      # no await since subscribing: later changes are queued
            sender = asyncio.create_task(_send(websocket, events, state))
            try:
                await _receive(websocket, rooms, room, manager, settings, presenter)
            except WebSocketDisconnect:
                pass
            finally:
                sender.cancel()
    finally:
        if presenter:
            rooms.presenters[room.code] -= 1


def _follow_room(rooms: RoomManager, room: Room, run: str | None, since: int):
    """A socket's log follower: the room's topic, and the room's run's log after `since` if the socket
    resumes that run (a `since` of another run means nothing: the whole log)."""
    since = since if run == room.run else 0
    return follow(rooms.runs, room.run, since, topics=[rooms.topic(room)], resync=partial(_resync, rooms, room))


async def _send(websocket: WebSocket, events: LogFollower, state: dict):
    """The room's state, then its run's log and live messages from the log follower; a state that
    names another run switches the follower to that run's whole log (again for a run shown before)."""
    await websocket.send_text(json.dumps(state, separators=(",", ":")))
    async for topic, message in events:
        if topic == events.run_id:
            await websocket.send_text(event_message(topic, message))
            continue
        if message.startswith('{"type":"state"'):
            _show(events, json.loads(message)["run"])
        await websocket.send_text(message)


def _show(events: LogFollower, run_id: str | None) -> None:
    if run_id != events.run_id:
        events.follow(run_id)


def _resync(rooms: RoomManager, room: Room, events: LogFollower) -> list[tuple[str, str]]:
    """For a socket too far behind: the room's state as it is now; its run's log follows from where the
    socket was (or from the start, for a run shown meanwhile)."""
    state = rooms.state(room)
    _show(events, state["run"])
    return [(rooms.topic(room), json.dumps(state, separators=(",", ":")))]


async def _receive(websocket, rooms: RoomManager, room: Room, manager, settings, presenter: bool):
    while True:
        message = await receive_control(websocket)
        if isinstance(message, Message):
            error = message
        elif not presenter:
            error = say("room.presenter_only", "only the presenter drives this room: open it with the presenter secret")
        else:
            error = await _apply(rooms, room, manager, settings, message)
        if error:
            await websocket.send_json(socket_error(error))


async def _apply(rooms: RoomManager, room: Room, manager, settings, message: dict):
    """Carry out one presenter message; an error (a Message, or a 422's detail list) or None."""
    op = message["op"]
    run = manager.get(room.run) if room.run else None
    try:
        if op == "run":
            body = RunCreate(**{k: v for k, v in message.items() if k != "op"})
            rooms.show_run(room, await start_run(manager, settings, body, room=room.code))
        elif op == "show":                               # a recorded run (reloaded from disk), any owner's:
            shown = manager.get(message["run"]) if isinstance(message.get("run"), str) else None
            if shown is None:                            # whoever has the secret is staff (an admin opened it)
                return say("run.not_found", "no run with id '{run_id}'", run_id=str(message.get("run"))[:64])
            rooms.show_run(room, shown)
        elif op == "seek":
            rooms.seek(room, message.get("seq"))
        elif op == "step":
            by = message.get("by", 1)
            if isinstance(by, bool) or not isinstance(by, int):
                return say("room.step_needs_integer", "step needs an integer `by` (default 1)")
            rooms.step(room, by)
        elif op == "view":
            rooms.set_view(room, message.get("view"))
        elif op in ("release", "continue", "pause", "cancel"):
            if run is None:
                return say("room.no_run", "the room has no run yet")
            if op == "cancel":
                manager.cancel(run)
                return None
            control = {"op": "step", "rank": message.get("rank")} if op == "release" else {"op": op}
            return manager.control(run, {k: v for k, v in control.items() if v is not None})
        else:
            return say("room.unknown_op", "unknown op '{op}': use run, show, step, seek, view, release, continue, pause or cancel",
                       op=str(op)[:64])
    except ValidationError as exc:                       # `loc` as the REST API words it
        return refusal([{**err, "loc": ["body", *err["loc"]]} for err in exc.errors()])
    except RunRejected as exc:
        return exc.detail
    except RoomError as exc:
        return exc.args[0]
    return None
