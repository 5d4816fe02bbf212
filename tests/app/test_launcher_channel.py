"""The server's side of the launcher channel, against a stand-in launcher that answers out of order:
each reply goes to the request that carries its id, a request never waits on another's reply (a
schedule check is not held up behind a launch), and a check asked again costs no round trip."""

from __future__ import annotations

import asyncio
import sys

import pytest

from app.launcher import Launcher, LauncherError

# Answers the first request only after the second: as a launch that takes long would, ahead of a check.
OUT_OF_ORDER = r"""
import json, sys
print(json.dumps({"ready": True, "devices": 0, "choices": {}}), flush=True)
first = json.loads(sys.stdin.readline())
second = json.loads(sys.stdin.readline())
print("not a reply", flush=True)
print(json.dumps({"id": second["id"], "problems": [["schedule", "second"]]}), flush=True)
print(json.dumps({"id": first["id"], "problems": [["schedule", "first"]]}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], "problems": [["asked", str(request["id"])]]}), flush=True)
"""


def stand_in(script: str) -> Launcher:
    launcher = Launcher()
    launcher.command = [sys.executable, "-c", script]
    return launcher


def test_replies_go_to_their_requests_whatever_their_order():
    async def scenario():
        launcher = stand_in(OUT_OF_ORDER)
        try:
            first = asyncio.create_task(launcher.check("pp", 2, {"n": 1}))
            await asyncio.sleep(0.05)
            second = asyncio.create_task(launcher.check("pp", 2, {"n": 2}))
            # the stand-in answers nothing before it has both: a second request that waited on the
            # first's reply (as under the old lock) would never be sent, and both would hang
            answers = await asyncio.wait_for(asyncio.gather(first, second), 30)
            assert answers == [[("schedule", "first")], [("schedule", "second")]]
            assert await launcher.check("pp", 2, {"n": 2}) == [("schedule", "second")]   # kept: not asked again
            assert await launcher.check("pp", 2, {"n": 3}) == [("asked", "3")]             # the next id is 3
        finally:
            await launcher.stop()
    asyncio.run(scenario())


def test_a_launcher_that_exits_fails_the_requests_waiting_on_it():
    async def scenario():
        launcher = stand_in('import json, sys; print(json.dumps({"ready": True}), flush=True); sys.stdin.readline()')
        try:
            with pytest.raises(LauncherError, match="exited"):
                await asyncio.wait_for(launcher.check("pp", 2, {}), 30)
        finally:
            await launcher.stop()
    asyncio.run(scenario())
