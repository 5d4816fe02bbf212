"""Lecture rooms against the live server: a presenter (with the secret) drives a run, its step and
view; followers (with the code only) receive the state first, then every event of the room's run
once and in order, then live changes within a second; late joiners, detach and rejoin with
`?run=&since=`, a follower that never reads, and every kind of refused input, which leaves the room
as it was. Restart and expiry, which need servers of their own, are in test_rooms_restart.py."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import pytest

from app.hub import Hub
from app.rooms import RoomManager
from app.routes.rooms import _follow_room, _send
from app.runs import RunManager
from app.settings import Settings
from tests import web
from tests.app.room_client import (RoomClient, StalledFollower, close_all, is_event, is_state, new_room,
                                   room_state, run_count, run_events, until_waiting)
from tests.app.helpers import RecordingSocket, until

CODE_ALPHABET = set("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")      # no 0/O, no 1/I
URLSAFE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
LIVE_S = 1.0                                                  # followers see a change within this


def run(scenario, timeout: float = 90):
    return asyncio.run(asyncio.wait_for(scenario, timeout))


async def presenter_runs(presenter: RoomClient, **body) -> str:
    """The presenter starts a run in the room; its id (from the state that says the room shows it)."""
    await presenter.send(op="run", **body)
    shown = await presenter.next(lambda m: (is_state(m) and m["run"]) or "error" in m)
    assert "error" not in shown, shown
    return shown["run"]


# ---- codes, secrets, reading a room --------------------------------------------------------------

def test_a_new_room_has_a_short_readable_code_and_an_unguessable_secret(server):
    bodies = []
    for _ in range(30):
        response = web.post(f"{server.url}/api/rooms")
        assert response.status_code == 201, response.text
        bodies.append(response.json())
    for body in bodies:
        assert set(body) == {"code", "secret", "follow_url"}
        assert len(body["code"]) == 8 and set(body["code"]) <= CODE_ALPHABET          # 32⁸ = 2⁴⁰ codes
        assert len(body["secret"]) >= 32 and set(body["secret"]) <= URLSAFE            # ≥ 192 bits
        assert body["follow_url"] == f"{server.url}/rooms/{body['code']}"
        assert body["secret"] not in body["follow_url"]
    assert len({b["code"] for b in bodies}) == len({b["secret"] for b in bodies}) == 30
    # drawn from the whole alphabet: 240 draws miss 3 of the 32 symbols with a chance under 10⁻⁶
    assert len(set("".join(b["code"] for b in bodies))) >= 30
    assert len(set("".join(b["secret"] for b in bodies))) >= 60                         # of 64


def test_a_room_reads_the_same_by_any_case_or_dashes_and_never_shows_its_secret(server):
    room = web.post(f"{server.url}/api/rooms").json()
    code, secret = room["code"], room["secret"]
    state = {"type": "state", "code": code, "run": None, "cursor": 0, "view": {}, "followers": 0}
    for spelling in (code, code.lower(), f"{code[:4]}-{code[4:]}", f"{code[:4].lower()}-{code[4:]}"):
        response = web.get(f"{server.url}/api/rooms/{spelling}")
        assert response.status_code == 200, response.text
        assert response.json() == state
        assert secret not in response.text
    qr = web.get(f"{server.url}/api/rooms/{code.lower()}/qr.svg")
    assert qr.status_code == 200 and qr.headers["content-type"].startswith("image/svg+xml")
    assert "<svg" in qr.text and code in qr.text and secret not in qr.text
    page = web.get(f"{server.url}/rooms/{code}")
    assert page.status_code == 200 and secret not in page.text

    async def scenario():
        follower = await RoomClient.open(server, f"{code[:4].lower()}-{code[4:].lower()}")
        presenter = await RoomClient.open(server, code.lower(), secret=secret)
        try:
            assert {**await follower.next(), "followers": 0} == state
            await presenter.send(op="view", view={"panel": "ring"})
            changed = await follower.next(is_state)
            assert changed["code"] == code and changed["view"] == {"panel": "ring"}
            assert secret not in json.dumps(follower.got)
        finally:
            await close_all(follower, presenter)

    run(scenario())


@pytest.mark.parametrize("code", ["ZZZZZZZZ", "nope", "ABCD-EFG", "A" * 200])
def test_an_unknown_room_code_is_refused_everywhere(server, code):
    for path in (f"/api/rooms/{code}", f"/api/rooms/{code}/qr.svg", f"/rooms/{code}"):
        response = web.get(server.url + path)
        assert response.status_code == 404, path
    assert "unknown or expired" in web.get(f"{server.url}/api/rooms/{code}").json()["detail"]

    async def scenario():
        for query in ({}, {"secret": "anything"}):
            client = await RoomClient.open(server, code, **query)
            assert "unknown or expired" in await client.error()
            assert await client.wait_closed() == 4404
            assert client.got == [client.got[0]]                  # the refusal, and nothing else

    run(scenario())


# ---- the lecture: everyone sees the presenter's run, step and view -------------------------------

def test_followers_get_every_event_of_the_presenters_run_once_in_order_and_each_change_within_1s(server):
    async def scenario():
        room = await new_room(server)
        followers = [await RoomClient.open(server, room["code"]) for _ in range(3)]
        presenter = await RoomClient.open(server, room["code"], secret=room["secret"])
        try:
            for client in followers + [presenter]:
                first = await client.next()
                assert first == {"type": "state", "code": room["code"], "run": None, "cursor": 0, "view": {},
                                 "followers": first["followers"]}
            # the presenter is told how many follow (at most once a second), the presenter not counted
            await presenter.next(lambda m: m.get("type") == "followers" and m["count"] == 3, timeout=5)

            sent = await presenter.send(op="run", lesson="tp_mlp", world_size=4)
            run_id = (await presenter.next(is_state))["run"]
            assert re.fullmatch(r"[0-9a-f]{12}", run_id)
            for follower in followers:
                await follower.until_final(60)
            recorded = await run_events(server, run_id)
            assert recorded[-1]["status"] == "done"
            for follower in followers:
                shown = follower.arrival(lambda m: is_state(m) and m["run"] == run_id)
                assert shown - sent <= LIVE_S
                # the state that names the run comes before its first event; then each event once, in order
                assert follower.got.index(next(m for m in follower.got if is_state(m) and m["run"])) \
                    < follower.got.index(next(m for m in follower.got if m.get("type") == "event"))
                assert all(m["run"] == run_id for m in follower.got if m.get("type") == "event")
                assert follower.events() == recorded
                assert [e["seq"] for e in follower.events()] == list(range(1, len(recorded) + 1))
            assert presenter.events() == recorded

            last = len(recorded)
            view = {"panel": "ring", "theme": "dark", "rank": 2}
            for op, cursor in [({"op": "step"}, 1), ({"op": "step", "by": 4}, 5), ({"op": "seek", "seq": 20}, 20),
                               ({"op": "step", "by": -3}, 17), ({"op": "seek", "seq": 10 ** 6}, last),
                               ({"op": "seek", "seq": 0}, 0), ({"op": "step", "by": -5}, 0),
                               ({"op": "view", "view": view}, 0), ({"op": "seek", "seq": 7}, 7)]:
                sent = await presenter.send(json.dumps(op))
                for follower in followers:
                    state = await follower.next(is_state, timeout=5)
                    assert state["run"] == run_id and state["cursor"] == cursor, op
                    assert state["view"] == (view if op["op"] == "view" or cursor == 7 else {})
                    assert follower.at[follower.pos - 1] - sent <= LIVE_S, f"{op} took longer than {LIVE_S} s"
            assert await room_state(server, room["code"]) == {
                "type": "state", "code": room["code"], "run": run_id, "cursor": 7, "view": view, "followers": 3}

            await followers.pop().close()                           # one leaves: the presenter hears of it
            await presenter.next(lambda m: m.get("type") == "followers" and m["count"] == 2, timeout=5)
        finally:
            await close_all(presenter, *followers)

    run(scenario())


def test_a_late_joiner_gets_the_current_state_then_the_backlog_then_live_events(server):
    """A step-mode run, so that it is certainly live: both ranks wait at a gate when the late joiner
    comes; then the presenter releases a rank and lets the run continue."""
    async def scenario():
        room = await new_room(server)
        presenter = await RoomClient.open(server, room["code"], secret=room["secret"])
        early = await RoomClient.open(server, room["code"])
        late = None
        try:
            run_id = await presenter_runs(presenter, lesson="tp_mlp", world_size=2, step=True)
            await until_waiting(early, {0, 1})
            await presenter.send(op="seek", seq=3)
            await presenter.send(op="view", view={"panel": "stepper"})
            await early.next(lambda m: is_state(m) and m["view"] == {"panel": "stepper"})
            so_far = await run_events(server, run_id)

            late = await RoomClient.open(server, room["code"])
            assert await late.next() == {"type": "state", "code": room["code"], "run": run_id, "cursor": 3,
                                         "view": {"panel": "stepper"}, "followers": 2}
            backlog = [await late.next() for _ in so_far]
            assert [m.get("event") for m in backlog] == so_far     # the backlog follows the state directly

            await presenter.send(op="release", rank=0)
            released = lambda m: is_event(m, kind="gate", rank=0, phase="released")    # noqa: E731
            await late.next(released)
            await early.next(released)
            await presenter.send(op="continue")
            await late.until_final()
            await early.until_final()
            recorded = await run_events(server, run_id)
            assert recorded[-1]["status"] == "done"
            assert late.events() == early.events() == recorded
            assert [m for m in late.got if is_state(m)] == [late.got[0]]   # one state: nothing changed since
        finally:
            await close_all(presenter, early, *([late] if late else []))

    run(scenario())


def test_a_follower_that_detaches_and_rejoins_with_run_and_since_misses_and_repeats_nothing(server):
    async def scenario():
        room = await new_room(server)
        presenter = await RoomClient.open(server, room["code"], secret=room["secret"])
        watcher = await RoomClient.open(server, room["code"])
        clients = [presenter, watcher]
        try:
            run_id = await presenter_runs(presenter, lesson="tp_mlp", world_size=2, step=True)
            await until_waiting(watcher, {0, 1})

            first = await RoomClient.open(server, room["code"], run=run_id, since=0)
            clients.append(first)
            await until_waiting(first, {0, 1})
            seen = first.events()
            await first.close()                                    # detached …

            await presenter.send(op="release")                     # … while the run goes on
            await watcher.next(lambda m: is_event(m, kind="gate", phase="released"))
            await until_waiting(watcher, {0, 1})
            missed = watcher.events()[len(seen):]
            assert missed

            again = await RoomClient.open(server, room["code"], run=run_id, since=seen[-1]["seq"])
            clients.append(again)
            assert (await again.next())["run"] == run_id           # the state first
            assert [(await again.next())["event"] for _ in missed] == missed
            await presenter.send(op="continue")                    # then live events
            await again.until_final()
            await watcher.until_final()
            recorded = await run_events(server, run_id)
            assert seen + again.events() == recorded == watcher.events()
            assert [e["seq"] for e in seen + again.events()] == list(range(1, len(recorded) + 1))

            # a `since` for another run than the room's is ignored: the whole run from seq 1
            other = await RoomClient.open(server, room["code"], run="0123456789ab", since=len(recorded) - 2)
            clients.append(other)
            await other.until_final()
            assert other.events() == recorded
            # caught up already: the state, then nothing until something happens
            current = await RoomClient.open(server, room["code"], run=run_id, since=len(recorded))
            clients.append(current)
            assert is_state(await current.next())
            await presenter.send(op="step")
            assert (await current.next(lambda m: m.get("type") != "followers"))["cursor"] == 1
            assert current.events() == []
        finally:
            await close_all(*clients)

    run(scenario())


# ---- only the presenter drives ---------------------------------------------------------------------

def test_a_followers_control_messages_are_refused_and_change_nothing(server):
    async def scenario():
        room = await new_room(server)
        presenter = await RoomClient.open(server, room["code"], secret=room["secret"])
        follower = await RoomClient.open(server, room["code"])
        try:
            run_id = await presenter_runs(presenter, lesson="tp_mlp", world_size=2, step=True)
            await until_waiting(follower, {0, 1})
            before = await room_state(server, room["code"])
            events_before = len(await run_events(server, run_id))
            for op in ({"op": "cancel"}, {"op": "release"}, {"op": "release", "rank": 0}, {"op": "continue"},
                       {"op": "pause"}, {"op": "step"}, {"op": "seek", "seq": 2}, {"op": "view", "view": {"x": 1}},
                       {"op": "run", "lesson": "tp_mlp", "world_size": 1}):
                await follower.send(json.dumps(op))
                assert "only the presenter" in await follower.error(), op
            async with httpx.AsyncClient() as http:
                assert (await http.get(f"{server.url}/api/runs/{run_id}")).json()["status"] == "running"
            assert await room_state(server, room["code"]) == before
            assert len(await run_events(server, run_id)) == events_before     # no rank was released
            assert not follower.closed

            await presenter.send(op="cancel")                       # the presenter may
            final = (await follower.until_final())["event"]
            assert final["status"] == "cancelled" and final["error"]["message"] == "cancelled by the user"
        finally:
            await close_all(presenter, follower)

    run(scenario())


def test_a_wrong_presenter_secret_is_refused_and_the_room_is_unaffected(server):
    async def scenario():
        room = await new_room(server)
        other_room = await new_room(server)
        presenter = await RoomClient.open(server, room["code"], secret=room["secret"])
        follower = await RoomClient.open(server, room["code"])
        try:
            await presenter.send(op="view", view={"panel": "ring"})
            await follower.next(lambda m: is_state(m) and m["view"])
            before = await room_state(server, room["code"])
            for secret in ("wrong", "", room["secret"][:-1], room["secret"] + "x", room["secret"].swapcase(),
                           other_room["secret"], room["code"]):
                intruder = await RoomClient.open(server, room["code"], secret=secret)
                assert "wrong presenter secret" in await intruder.error()
                assert await intruder.wait_closed() == 4403
                assert intruder.got == [intruder.got[0]]            # not even the room's state
            assert await room_state(server, room["code"]) == before
            # the follower saw nothing of them; the presenter still drives
            await presenter.send(op="view", view={"panel": "stepper"})
            assert (await follower.next(lambda m: m.get("type") != "followers"))["view"] == {"panel": "stepper"}
        finally:
            await close_all(presenter, follower)

    run(scenario())


# ---- bad input ----------------------------------------------------------------------------------

BAD_MESSAGES = [   # (what the presenter sends, a piece of the refusal)
    (json.dumps({"op": "view", "view": {"pad": "x" * 5000}}), "too large"),
    (json.dumps({"op": "seek", "seq": 1, "pad": "é" * 2100}, ensure_ascii=False), "too large"),   # 4.2 KB
    ("not json", '"op"'),
    ("", '"op"'),
    ("[1, 2]", '"op"'),
    ('"seek"', '"op"'),
    ("null", '"op"'),
    ("{}", '"op"'),
    ('{"seq": 3}', '"op"'),
    ("[" * 3000, '"op"'),                                          # nested too deep for the parser
    ('{"op": "seek", "seq": ' + "[" * 2000 + "]" * 2000 + "}", '"op"'),
    (json.dumps({"op": "fly"}), "unknown op"),
    (json.dumps({"op": 5}), "unknown op"),
    (json.dumps({"op": ["step"]}), "unknown op"),
    (json.dumps({"op": "seek"}), "seek"),
    (json.dumps({"op": "seek", "seq": -1}), "seek"),
    (json.dumps({"op": "seek", "seq": "3"}), "seek"),
    (json.dumps({"op": "seek", "seq": 2.5}), "seek"),
    (json.dumps({"op": "seek", "seq": True}), "seek"),
    (json.dumps({"op": "step", "by": "x"}), "step"),
    (json.dumps({"op": "step", "by": 1.5}), "step"),
    (json.dumps({"op": "step", "by": None}), "step"),
    (json.dumps({"op": "view"}), "view"),
    (json.dumps({"op": "view", "view": [1, 2]}), "view"),
    (json.dumps({"op": "view", "view": "ring"}), "view"),
    (json.dumps({"op": "view", "view": {"pad": "x" * 2100}}), "view"),   # the message fits, the view not
    (json.dumps({"op": "release", "rank": 0}), "ended"),
    (json.dumps({"op": "continue"}), "ended"),
    (json.dumps({"op": "pause"}), "ended"),
]


def test_oversized_and_malformed_presenter_messages_are_refused_and_change_nothing(server):
    async def scenario():
        room = await new_room(server)
        presenter = await RoomClient.open(server, room["code"], secret=room["secret"])
        follower = await RoomClient.open(server, room["code"])
        try:
            run_id = await presenter_runs(presenter, lesson="tp_mlp", world_size=1)
            await follower.until_final()
            await presenter.send(op="seek", seq=3)
            await presenter.send(op="view", view={"panel": "ring"})
            await follower.next(lambda m: is_state(m) and m["view"] == {"panel": "ring"})
            before, runs_before = await room_state(server, room["code"]), await run_count(server)
            taken = len(follower.got)

            for text, refusal in BAD_MESSAGES:
                await presenter.send(text)
                error = await presenter.error()
                assert isinstance(error, str) and refusal in error, (text[:60], error)
            await presenter.send(b'{"op": "step"}')                # a binary frame is no control message
            assert '"op"' in await presenter.error()

            assert not presenter.closed                            # refused, not disconnected
            assert await room_state(server, room["code"]) == before
            assert await run_count(server) == runs_before
            # the follower got nothing meanwhile: the next change it sees is the presenter's next one
            await presenter.send(op="step")
            assert await follower.next(lambda m: m.get("type") != "followers") == {**before, "cursor": 4}
            assert [m for m in follower.got[taken:] if m.get("type") != "followers"] == [{**before, "cursor": 4}]
            assert follower.events() == await run_events(server, run_id)
        finally:
            await close_all(presenter, follower)

    run(scenario())


def test_an_invalid_run_is_refused_with_the_same_422_list_as_the_rest_api_and_nothing_starts(server):
    bodies = [
        {"lesson": "tp_mlp", "world_size": 3},                              # the default ffn does not divide
        {"lesson": "tp_mlp", "world_size": 4, "params": {"ffn": 63}},
        {"lesson": "tp_mlp", "world_size": 4, "params": {"bogus": 1}},
        {"lesson": "tp_mlp", "world_size": 99},
        {"lesson": "no_such_lesson", "world_size": 2},
    ]
    malformed = [   # refused before the lesson is looked at: `loc` names the field as the REST API does
        ({"world_size": 2}, ["body", "lesson"]),
        ({"lesson": "tp_mlp", "world_size": "four"}, ["body", "world_size"]),
        ({"lesson": "tp_mlp", "world_size": 2, "params": [1]}, ["body", "params"]),
    ]

    async def scenario():
        room = await new_room(server)
        presenter = await RoomClient.open(server, room["code"], secret=room["secret"])
        follower = await RoomClient.open(server, room["code"])
        try:
            run_id = await presenter_runs(presenter, lesson="tp_mlp", world_size=1)
            await follower.until_final()
            before, runs_before = await room_state(server, room["code"]), await run_count(server)
            async with httpx.AsyncClient() as http:
                for body in bodies:
                    await presenter.send(op="run", **body)
                    error = await presenter.error()
                    rest = await http.post(f"{server.url}/api/runs", json=body)
                    assert rest.status_code == 422
                    assert error == rest.json()["detail"], body
                    assert isinstance(error, list) and error[0]["loc"][0] == "body" and error[0]["msg"]
                assert "divisible" in json.dumps((await http.post(f"{server.url}/api/runs", json=bodies[0])).json())
                for body, loc in malformed:
                    await presenter.send(op="run", **body)
                    error = await presenter.error()
                    rest = (await http.post(f"{server.url}/api/runs", json=body)).json()["detail"]
                    assert [(e["loc"], e["msg"]) for e in error] == [(e["loc"], e["msg"]) for e in rest], body
                    assert error[0]["loc"] == loc
            assert await run_count(server) == runs_before                   # nothing was started
            assert await room_state(server, room["code"]) == before         # the room still shows its run
            assert before["run"] == run_id
            assert [m for m in follower.got if is_state(m) and m["run"] != run_id] == [follower.got[0]]
        finally:
            await close_all(presenter, follower)

    run(scenario())


# ---- a follower that never reads --------------------------------------------------------------------

def test_a_stalled_follower_does_not_slow_the_other_twenty(server):
    """A follower that never reads: the server's writes to it fill the kernel's buffers and then block
    (megabytes it could not send); 20 followers who joined after still get every event of a run and
    each step within a second."""
    async def scenario():
        room = await new_room(server)
        presenter = await RoomClient.open(server, room["code"], secret=room["secret"])
        stalled = StalledFollower(server, room["code"])
        followers: list[RoomClient] = []
        try:
            pad = "x" * 1900                                       # views near the 2 KiB limit, 4 MB in all
            for n in range(2000):
                await presenter.send(op="view", view={"n": n, "pad": pad})
            await presenter.next(lambda m: is_state(m) and m["view"].get("n") == 1999, timeout=30)
            for _ in range(300):                                   # a loaded server is still writing them
                if stalled.server_unsent_bytes() > 1_000_000:
                    break
                await asyncio.sleep(0.1)
            assert stalled.server_unsent_bytes() > 1_000_000      # the server holds what it cannot send

            followers = await asyncio.gather(*(RoomClient.open(server, room["code"]) for _ in range(20)))
            for follower in followers:
                assert (await follower.next())["view"]["n"] == 1999
            run_id = await presenter_runs(presenter, lesson="tp_mlp", world_size=2)
            for follower in followers:
                await follower.until_final(60)
            recorded = await run_events(server, run_id)
            assert all(follower.events() == recorded for follower in followers)

            for step in range(1, 11):
                sent = await presenter.send(op="step")
                for follower in followers:
                    state = await follower.next(is_state, timeout=5)
                    assert state["cursor"] == step
                    assert follower.at[follower.pos - 1] - sent <= LIVE_S, \
                        f"step {step} reached a follower after {follower.at[follower.pos - 1] - sent:.2f} s"
            assert stalled.server_unsent_bytes() > 1_000_000      # still stalled all along

            stalled.close()                                        # the server lets go of it too
            await close_all(*followers)
            for _ in range(100):
                if (await room_state(server, room["code"]))["followers"] == 0:
                    break
                await asyncio.sleep(0.05)
            assert (await room_state(server, room["code"]))["followers"] == 0
        finally:
            stalled.close()
            await close_all(presenter, *followers)

    run(scenario(), timeout=120)


# ---- the hub's bounded queue, without a server ------------------------------------------------------

def test_a_follower_whose_queue_overflows_is_resynchronised_and_still_gets_every_event_once(tmp_path):
    """A queue of 4 messages, a burst of 40 events: the follower is marked lagged, its sender sends the
    room's state again and the missed events from the log, each once; a follower that had resumed
    with `since` is not sent again what it had."""
    async def scenario():
        hub = Hub(queue_size=4)
        manager = RunManager(Settings(DATA_DIR=tmp_path), hub)
        manager.runs_dir.mkdir(parents=True)
        rooms = RoomManager(tmp_path, hub, manager, ttl_s=60)
        room, _ = rooms.create()
        run = manager.create("tp_mlp", 1, {}, False, "gloo")           # seq 1 (queued)
        rooms.show_run(room, run)
        for n in range(5):
            manager.record(run, {"kind": "log", "message": f"before {n}"})
        fresh, resumed = RecordingSocket(), RecordingSocket()
        async with _follow_room(rooms, room, None, 0) as first, _follow_room(rooms, room, run.id, 6) as second:
            senders = [asyncio.create_task(_send(fresh, first, rooms.state(room))),
                       asyncio.create_task(_send(resumed, second, rooms.state(room)))]
            for n in range(40):                                        # a burst: both queues overflow
                manager.record(run, {"kind": "log", "message": f"burst {n}"})
            assert first.subscriber.lagged and second.subscriber.lagged
            await until(lambda: not first.subscriber.lagged and not second.subscriber.lagged)   # resynchronised and drained
            for n in range(5):                                         # then live again
                manager.record(run, {"kind": "log", "message": f"late {n}"})
                await asyncio.sleep(0.01)
            rooms.seek(room, 50)
            await until(lambda: all(s.sent and s.sent[-1].get("cursor") == 50 for s in (fresh, resumed)))
            for sender in senders:
                sender.cancel()
        return fresh.sent, resumed.sent, len(run.events)

    fresh, resumed, total = asyncio.run(scenario())
    for sent, since in ((fresh, 0), (resumed, 6)):
        assert [m["event"]["seq"] for m in sent if m["type"] == "event"] == list(range(since + 1, total + 1))
        states = [m for m in sent if m["type"] == "state"]
        assert sent[0] == states[0] and len(states) == 3               # first, after the resync, the seek
        assert states[-1]["cursor"] == 50 == sent[-1]["cursor"]


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_an_idle_room_is_deleted_and_a_room_in_use_is_kept_alive(tmp_path):
    """TTL 60 s on a clock of our own, the rooms tended as their loop does once a second: the room nobody
    joined is refused once idle past the TTL, then gone from memory and disk; the room with a socket
    open outlives the TTL, and gets a whole TTL after its last socket leaves, its last use saved."""
    async def scenario():
        clock = Clock(1_000_000.0)
        hub = Hub(queue_size=8)
        rooms = RoomManager(tmp_path, hub, RunManager(Settings(DATA_DIR=tmp_path), hub), ttl_s=60, clock=clock)
        idle, _ = rooms.create()
        used, _ = rooms.create()
        saved = tmp_path / "rooms"
        async with hub.subscribe(rooms.topic(used)):
            clock.now += 60
            rooms.tend()
            assert rooms.get(idle.code) is idle                   # idle for the TTL, not past it
            clock.now += 1
            assert rooms.get(idle.code) is None                   # refused at once, deleted by the tending
            assert (saved / f"{idle.code}.json").exists()
            rooms.tend()
            assert idle.code not in rooms.rooms and not (saved / f"{idle.code}.json").exists()
            assert rooms.get(used.code) is used
            left_at = clock.now
        clock.now += 30
        rooms.tend()
        assert rooms.get(used.code) is used                       # just left: not idle yet
        assert json.loads((saved / f"{used.code}.json").read_text())["active_at"] == left_at
        clock.now = left_at + 60
        rooms.tend()
        assert rooms.get(used.code) is used
        clock.now += 1
        rooms.tend()
        assert rooms.get(used.code) is None and list(saved.glob("*.json")) == []

    asyncio.run(scenario())
