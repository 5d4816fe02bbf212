"""A lecturer's safety net: the presenter shows the room a run recorded earlier (`{"op": "show", "run"}`)
instead of starting one. Followers get the state naming it, then its whole log once and in order —
even a run reloaded from disk, and a run shown again after another. An unknown id and a follower's
`show` are refused and change nothing."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.app.room_client import RoomClient, close_all, is_state, new_room, room_state, run_events
from tests.conftest import LiveServer


def run(scenario, timeout: float = 60):
    return asyncio.run(asyncio.wait_for(scenario, timeout))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A server that keeps one ended run in memory: the others reload from disk on `RunManager.get`."""
    live = LiveServer(tmp_path_factory.mktemp("paralab-show"), env={"PARALAB_RUNS_IN_MEMORY": "1"}).start()
    yield live
    live.stop()


def log_after_state(client: RoomClient, run_id: str, nth: int = 0) -> list[dict]:
    """The events of `run_id` that `client` received after the nth state naming it (before the next state)."""
    starts = [i for i, m in enumerate(client.got) if is_state(m) and m["run"] == run_id]
    out = []
    for m in client.got[starts[nth] + 1:]:
        if is_state(m) and m["run"] != run_id:
            break
        if m.get("type") == "event":
            assert m["run"] == run_id, m
            out.append(m["event"])
    return out


async def shown(client: RoomClient, run_id: str, count: int) -> None:
    """Wait until `client` has the state naming `run_id` and then `count` of its events."""
    await client.next(lambda m: is_state(m) and m["run"] == run_id)
    for _ in range(count):
        await client.next(lambda m: m.get("type") == "event" and m["run"] == run_id)


def test_a_recorded_run_shown_reaches_followers_whole_once_in_order_even_shown_again(lab):
    first = lab.run("tp_mlp", 2)
    second = lab.run("tp_mlp", 1)                         # `first` has left memory: it reloads from disk
    assert first["status"] == second["status"] == "done"

    async def scenario():
        recorded = {r["id"]: await run_events(lab, r["id"]) for r in (first, second)}
        room = await new_room(lab)
        presenter = await RoomClient.open(lab, room["code"], secret=room["secret"])
        follower = await RoomClient.open(lab, room["code"])
        try:
            await presenter.next(is_state)
            await follower.next(is_state)
            for nth, run_id in [(0, first["id"]), (0, second["id"]), (1, first["id"])]:   # A, B, then A again
                await presenter.send(op="show", run=run_id)
                for client in (follower, presenter):
                    await shown(client, run_id, len(recorded[run_id]))
                    state = [m for m in client.got if is_state(m) and m["run"] == run_id][nth]
                    assert state["cursor"] == 0
                    assert log_after_state(client, run_id, nth) == recorded[run_id]
            await asyncio.sleep(0.3)                          # nothing more arrives: each event once
            assert log_after_state(follower, first["id"], 1) == recorded[first["id"]]
            assert [e["seq"] for e in recorded[first["id"]]] == list(range(1, len(recorded[first["id"]]) + 1))
            assert (await room_state(lab, room["code"]))["run"] == first["id"]

            late = await RoomClient.open(lab, room["code"])    # a late joiner: the state, then the log
            try:
                await shown(late, first["id"], len(recorded[first["id"]]))
                assert late.events() == recorded[first["id"]]
            finally:
                await late.close()
        finally:
            await close_all(presenter, follower)

    run(scenario())


def test_an_unknown_run_or_a_followers_show_is_refused_and_changes_nothing(lab):
    done = lab.run("tp_mlp", 1)

    async def scenario():
        room = await new_room(lab)
        presenter = await RoomClient.open(lab, room["code"], secret=room["secret"])
        follower = await RoomClient.open(lab, room["code"])
        try:
            await presenter.next(is_state)
            await follower.next(is_state)
            before = await room_state(lab, room["code"])
            for bad in ("0123456789ab", "../rooms", "", None, 5, ["x"]):
                await presenter.send(json.dumps({"op": "show", "run": bad}))
                assert await presenter.error() == f"no run with id '{bad}'"
            await presenter.send(json.dumps({"op": "show"}))
            assert await presenter.error() == "no run with id 'None'"
            await follower.send(op="show", run=done["id"])
            assert "only the presenter" in await follower.error()
            await asyncio.sleep(0.3)
            assert await room_state(lab, room["code"]) == before
            assert before["run"] is None
            assert not any(m.get("type") == "event" for m in follower.got)
            assert not presenter.closed and not follower.closed
        finally:
            await close_all(presenter, follower)

    run(scenario())
