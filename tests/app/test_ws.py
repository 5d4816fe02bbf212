"""`WS /ws/runs/{id}?since=N`: the recorded events after N, then live ones, each exactly once, also
for a client that reconnects while the run is live; an unknown run gets an error."""

from __future__ import annotations

import json

import pytest
from websockets.exceptions import ConnectionClosed

from tests import web
from tests.app.helpers import events, is_final, ws_connect, ws_receive, ws_until_final, wait_for


def test_a_finished_run_streams_every_recorded_event(server):
    run = server.run("tp_mlp", 2)
    recorded = events(server, run["id"])
    with ws_connect(server, run["id"]) as ws:
        assert ws_until_final(ws) == recorded
    with ws_connect(server, run["id"], since=10) as ws:
        assert ws_until_final(ws) == recorded[10:]
    assert events(server, run["id"], since=10) == recorded[10:]


def test_a_live_run_streams_from_its_start(server):
    run = server.start_run("sp_mlp", 4)
    with ws_connect(server, run["id"], since=0) as ws:
        got = ws_until_final(ws)
    assert [e["seq"] for e in got] == list(range(1, len(got) + 1))
    assert got == events(server, run["id"])
    assert got[-1]["status"] == "done"


def test_reconnecting_with_since_loses_and_repeats_nothing(server):
    """A client that drops every few events and comes back with ?since=<last seq it saw>."""
    run = server.start_run("tp_mlp", 4, {"seq_len": 32, "hidden": 32, "ffn": 128})
    seen: list[dict] = []
    reconnects = 0
    while not (seen and is_final(seen[-1])):
        with ws_connect(server, run["id"], since=seen[-1]["seq"] if seen else 0) as ws:
            reconnects += 1
            for _ in range(3):
                seen.append(ws_receive(ws))
                if is_final(seen[-1]):
                    break
    assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
    assert seen == events(server, run["id"])
    assert reconnects > 10


def test_reconnect_while_live_then_receive_what_happens_next(server):
    """A run that is certainly live (a rank hangs): catch up, drop, come back with ?since, and get
    the cancellation that happens after, once."""
    run = server.start_run("crash", 2, {"how": "hang", "rank": 1})
    try:
        wait_for(lambda: sum(e["kind"] == "collective" for e in events(server, run["id"])) >= 5)
        so_far = events(server, run["id"])
        with ws_connect(server, run["id"]) as ws:
            first = [ws_receive(ws) for _ in so_far]
        assert first == so_far
        with ws_connect(server, run["id"], since=first[-1]["seq"]) as ws, \
                ws_connect(server, run["id"], since=first[-1]["seq"]) as other:
            web.delete(f"{server.url}/api/runs/{run['id']}")
            rest = ws_until_final(ws)
            assert ws_until_final(other) == rest
        assert [e["seq"] for e in first + rest] == list(range(1, len(first) + len(rest) + 1))
        assert rest[-1]["status"] == "cancelled"
    finally:
        web.delete(f"{server.url}/api/runs/{run['id']}")


def test_since_past_the_end_waits_for_new_events(server):
    run = server.run("tp_mlp", 1)
    with ws_connect(server, run["id"], since=10_000) as ws:
        with pytest.raises(TimeoutError):
            ws.recv(timeout=0.3)


@pytest.mark.parametrize("run_id", ["0123456789ab", "not-a-run", "a.b"])
def test_unknown_run_gets_an_error_and_the_socket_closes(server, run_id):
    with ws_connect(server, run_id) as ws:
        message = ws_receive(ws)
        assert run_id in message["error"]
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=5)
        assert ws.close_code == 4404


def test_run_socket_refuses_binary_deep_and_oversized_messages_and_stays_open(server):
    """The same refusals as a room's socket: each answered with an error, the socket still usable."""
    run = server.run("tp_mlp", 1)
    with ws_connect(server, run["id"]) as ws:
        while not is_final(ws_receive(ws)):
            pass
        for bad in (b"\x00\x01", "[" * 3000, "é" * 2100, '{"no": "op"}'):
            ws.send(bad)
            assert "error" in ws_receive(ws)
        ws.send(json.dumps({"op": "pause"}))
        assert "has ended" in ws_receive(ws)["error"]
