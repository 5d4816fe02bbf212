"""The server checks every rank event at ingest: a malformed one fails the run with a `protocol`
error naming the rank and the field, and is never recorded nor shown."""

from __future__ import annotations

import pytest

from tests.app.helpers import events, ws_connect, ws_until_final


@pytest.mark.parametrize("what, named", [
    ("bytes_as_text", "rank 1 sent a collective event whose field `bytes` is wrong: Input should be a valid integer"),
    ("unknown_kind", "rank 1 sent an event whose field `kind` is 'telemetry', not one of the kinds"),
    ("unknown_field", "rank 1 sent a compute event with the field `colour`, which a compute event does not have"),
])
def test_a_malformed_event_fails_the_run_and_is_never_shown(server, what, named):
    run = server.run("crash", 2, {"how": what, "rank": 1})
    assert run["status"] == "failed"
    assert run["error"]["kind"] == "protocol" and run["error"]["rank"] == 1
    assert run["error"]["message"].startswith(named)
    recorded = events(server, run["id"])
    assert not [e for e in recorded if e.get("label") == "the malformed one"]
    assert recorded[-1]["error"] == run["error"]
    with ws_connect(server, run["id"], since=0) as ws:   # nor to a page watching
        shown = ws_until_final(ws)
    assert [e["seq"] for e in shown] == [e["seq"] for e in recorded]
