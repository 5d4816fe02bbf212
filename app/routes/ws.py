"""`WS /ws/runs/{id}?since=N`: every recorded event after `seq` N, then live events, each exactly once.

One task sends, one receives control messages (a lecture room's run: only with the room's
presenter secret, `?secret=…`): `{"op": "cancel"}`, and for step mode
`{"op": "step", "rank": r}` (release one waiting rank; without `rank`, every waiting rank),
`{"op": "continue"}` (stop pausing) and `{"op": "pause"}` (pause again at each rank's next call). A client that falls too far behind is resynchronised from the log.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from app.auth import current_user, may_see
from app.deps import RunManagerDep
from app.log_follower import LogFollower, event_text, follow
from app.messages import Message, say, socket_error
from app.routes.control import receive_control
from app.runs import Run, RunManager

router = APIRouter(tags=["websocket"])

@router.websocket("/ws/runs/{run_id}")
async def run_events(websocket: WebSocket, run_id: str, manager: RunManagerDep, since: int = 0,
                     secret: str | None = None):
    run = manager.get(run_id)
    await websocket.accept()
    if run is not None and not may_see(current_user(websocket), run.owner):   # another user's run
        run = None
    if run is None:
        await websocket.send_json(socket_error(say("run.not_found", "no run with id '{run_id}'", run_id=run_id)))
        await websocket.close(code=4404)
        return
    async with follow(manager, run.id, since) as events:
        sender = asyncio.create_task(_send(websocket, events))
        try:
            await _receive(websocket, manager, run, secret)
        except WebSocketDisconnect:
            pass
        finally:
            sender.cancel()


async def _send(websocket: WebSocket, events: LogFollower):
    async for _, event in events:
        await websocket.send_text(event_text(event))


def _control_refusal(websocket: WebSocket, run: Run, secret: str | None) -> Message | None:
    """A lecture room's run obeys its presenter only (the room's secret, `?secret=`)."""
    return websocket.app.state.rooms.control_refusal(run, secret)


async def _receive(websocket: WebSocket, manager: RunManager, run: Run, secret: str | None = None):
    while True:
        message = await receive_control(websocket)
        if isinstance(message, Message):
            error = message
        elif refusal := _control_refusal(websocket, run, secret):
            error = refusal
        elif message["op"] == "cancel" and not run.final:   # an ended run's cancel: says it has ended
            manager.cancel(run)
            continue
        else:
            error = manager.control(run, message)
        if error:
            await websocket.send_json(socket_error(error))
