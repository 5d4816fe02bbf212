"""A lecture room's run is driven by its presenter only (issue #10, point 7): a student who knows the
run's id cannot step, pause, continue or cancel it through `/ws/runs/{id}` or `DELETE /api/runs/{id}`
without the room's secret; with it, they can. And a `cancel` sent for an ended run is answered."""

from __future__ import annotations

import asyncio
import json

from websockets.sync.client import connect

from tests import web
from tests.app.helpers import RunProcesses, ws_connect, ws_receive
from tests.app.room_client import RoomClient, close_all, new_room, run_events, until_waiting

CONTROLS = ({"op": "cancel"}, {"op": "step"}, {"op": "step", "rank": 0}, {"op": "continue"}, {"op": "pause"})


def _presenter_starts_a_step_run(server) -> tuple[dict, str]:
    async def scenario():
        room = await new_room(server)
        presenter = await RoomClient.open(server, room["code"], secret=room["secret"])
        try:
            await presenter.send(op="run", lesson="tp_mlp", world_size=2, step=True)
            shown = await presenter.next(lambda m: (m.get("type") == "state" and m["run"]) or "error" in m)
            assert "error" not in shown, shown
            await until_waiting(presenter, {0, 1})
            return room, shown["run"]
        finally:
            await close_all(presenter)

    return asyncio.run(asyncio.wait_for(scenario(), 90))


def _status(server, run_id: str) -> str:
    return web.get(f"{server.url}/api/runs/{run_id}").json()["status"]


def test_a_rooms_run_refuses_a_students_controls_and_obeys_the_secret(server):
    with RunProcesses(server) as procs:
        room, run_id = _presenter_starts_a_step_run(server)
        events_before = len(asyncio.run(run_events(server, run_id)))

        refused = web.delete(f"{server.url}/api/runs/{run_id}")
        assert refused.status_code == 403 and "only its presenter" in refused.json()["detail"]
        wrong = web.delete(f"{server.url}/api/runs/{run_id}", params={"secret": "guessed"})
        assert wrong.status_code == 403
        with ws_connect(server, run_id, since=10_000) as ws:
            for control in CONTROLS:
                ws.send(json.dumps(control))
                assert "only its presenter" in ws_receive(ws)["error"], control
        assert _status(server, run_id) == "running"
        assert len(asyncio.run(run_events(server, run_id))) == events_before     # no rank was released

        allowed = web.delete(f"{server.url}/api/runs/{run_id}", params={"secret": room["secret"]})
        assert allowed.status_code == 200 and allowed.json()["status"] == "cancelled"
    assert procs.left_behind() == []


def test_the_presenter_steps_a_rooms_run_through_its_run_socket_with_the_secret(server):
    room, run_id = _presenter_starts_a_step_run(server)
    since = len(asyncio.run(run_events(server, run_id)))
    with connect(f"{server.ws_url}/ws/runs/{run_id}?since={since}&secret={room['secret']}", open_timeout=10) as ws:
        ws.send(json.dumps({"op": "step", "rank": 0}))
        released = ws_receive(ws)
        assert "error" not in released and released["rank"] == 0 and released["kind"] == "gate", released
        ws.send(json.dumps({"op": "cancel"}))
        while not (message := ws_receive(ws)).get("status") == "cancelled":
            assert "error" not in message, message
        ws.send(json.dumps({"op": "cancel"}))                    # the run has ended: said so, not silence
        assert ws_receive(ws)["error"] == f"run {run_id} has ended"


def test_a_cancel_on_an_ended_runs_socket_is_answered(server):
    run = server.run("tp_mlp", 2)
    with ws_connect(server, run["id"], since=10_000) as ws:
        ws.send(json.dumps({"op": "cancel"}))
        assert ws_receive(ws) == {"error": f"run {run['id']} has ended", "code": "run.ended",
                                  "params": {"run_id": run["id"]}}
