"""Rooms that expire when idle, and a lecture across a server restart: one test, because it starts
two servers of its own (a start takes 10 s or more on two cores)."""

from __future__ import annotations

import asyncio
import time

from tests.app.room_client import RoomClient, close_all, get, is_event, is_final, is_state, new_room, \
    room_state, run_events, until_waiting


async def refused_as_unknown(server, code: str, secret: str) -> None:
    for path in (f"/api/rooms/{code}", f"/api/rooms/{code}/qr.svg", f"/rooms/{code}"):
        assert (await get(server, path)).status_code == 404, path
    assert "unknown or expired" in (await get(server, f"/api/rooms/{code}")).json()["detail"]
    for query in ({}, {"secret": secret}):
        client = await RoomClient.open(server, code, **query)
        assert "unknown or expired" in await client.error()
        assert await client.wait_closed() == 4404


def test_an_idle_room_expires_and_a_lecture_survives_a_server_restart(server_factory, tmp_path):
    """On a server with PARALAB_ROOM_TTL_S=4, one room is left idle and expires: refused like an
    unknown code, over REST and on the socket, to followers and its presenter alike; the lecture room,
    used all along, outlives the TTL. In it the presenter's step-mode run waits at a gate, the cursor
    and view are set, when the server stops. The next server on the same data dir has the room with
    the same state; the follower comes back with `?run=&since=` and gets exactly the rest of the run
    (its end: the server stopped), a new follower the whole run; the presenter's secret still drives
    the room, a wrong one still does not."""
    ttl = 4.0

    async def scenario():
        first = await asyncio.to_thread(server_factory, tmp_path, env={"PARALAB_ROOM_TTL_S": str(ttl)})
        idle = await new_room(first)
        created = time.monotonic()
        assert (await room_state(first, idle["code"]))["run"] is None
        room = await new_room(first)
        presenter = await RoomClient.open(first, room["code"], secret=room["secret"])
        follower = await RoomClient.open(first, room["code"])
        await presenter.send(op="run", lesson="tp_mlp", world_size=2, step=True)
        run_id = (await presenter.next(lambda m: is_state(m) and m["run"]))["run"]
        await until_waiting(follower, {0, 1})
        await presenter.send(op="seek", seq=4)
        n = 0
        while time.monotonic() - created < ttl + 1:               # past the TTL, a change every 0.5 s
            await presenter.send(op="view", view={"panel": "stepper", "n": n})
            await follower.next(lambda m: is_state(m) and m["view"].get("n") == n)
            assert (await room_state(first, room["code"]))["view"]["n"] == n
            n += 1
            await asyncio.sleep(0.5)
        await refused_as_unknown(first, idle["code"], idle["secret"])
        state = await room_state(first, room["code"])
        assert state["run"] == run_id and state["cursor"] == 4

        await asyncio.to_thread(first.stop)                       # mid-lecture
        await follower.wait_closed()
        await presenter.wait_closed()
        seen = follower.events()                                  # what it had when its socket went
        assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))

        second = await asyncio.to_thread(server_factory, tmp_path)
        assert await room_state(second, room["code"]) == {**state, "followers": 0}
        recorded = await run_events(second, run_id)
        assert recorded[: len(seen)] == seen
        assert recorded[-1]["status"] == "cancelled" and "server stopped" in recorded[-1]["error"]["message"]
        assert (await get(second, f"/api/runs/{run_id}")).json()["status"] == "cancelled"
        assert (await get(second, f"/api/rooms/{room['code']}/qr.svg")).status_code == 200

        back = await RoomClient.open(second, room["code"].lower(), run=run_id, since=seen[-1]["seq"])
        new = await RoomClient.open(second, room["code"])
        presenter = await RoomClient.open(second, room["code"], secret=room["secret"])
        try:
            assert await back.next() == {**state, "followers": 1}
            rest = [(await back.next())["event"] for _ in recorded[len(seen):]]
            assert seen + rest == recorded                          # nothing missed, nothing twice
            assert (await new.next())["cursor"] == 4
            await new.next(lambda m: is_final(m) and m["run"] == run_id)
            assert new.events() == recorded

            intruder = await RoomClient.open(second, room["code"], secret="not-the-secret")
            assert "wrong presenter secret" in await intruder.error()
            assert await intruder.wait_closed() == 4403

            await presenter.send(op="run", lesson="tp_mlp", world_size=2)     # the lecture goes on
            next_run = (await back.next(lambda m: is_state(m) and m["run"] != run_id))["run"]
            assert (await back.next(is_event))["event"]["seq"] == 1
            await back.until_final()
            await new.until_final()
            assert back.events(next_run) == new.events(next_run) == await run_events(second, next_run)
            assert back.events(run_id) == rest
            return len(rest)
        finally:
            await close_all(back, new, presenter)

    missed = asyncio.run(asyncio.wait_for(scenario(), 300))   # two server starts: a minute each on loaded cores
    print(f"the follower missed {missed} event(s) while the server was down")
