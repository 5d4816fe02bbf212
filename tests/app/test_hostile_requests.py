"""Requests an outside probe sent to break the server (issue #10), sent again: each is refused with a
422 that names the field (never a 500), the launcher channel stays in step, and a cancel stops
every rank. The server goes on serving the next request."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.launcher import Launcher, LauncherError
from tests import web
from tests.app.helpers import RunProcesses, is_final, events
from workers.lessons import LESSONS


def _unbounded(schema: dict, defs: dict, path: str = "") -> list[str]:
    """The fields of a JSON schema a request could make as large as it likes."""
    if "$ref" in schema:
        return _unbounded(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, path)
    found = []
    for option in schema.get("anyOf", []):
        found += _unbounded(option, defs, path)
    kind = schema.get("type")
    if "enum" in schema or "const" in schema:
        return found
    if kind == "string" and "maxLength" not in schema:
        found.append(f"{path}: a string without maxLength")
    if kind in ("integer", "number") and ("maximum" not in schema and "exclusiveMaximum" not in schema):
        found.append(f"{path}: a number without maximum")
    if kind == "array":
        if "maxItems" not in schema:
            found.append(f"{path}: a list without maxItems")
        found += _unbounded(schema.get("items", {}), defs, path + "[]")
    if kind == "object":
        if schema.get("additionalProperties", False) is not False:
            found.append(f"{path}: an object open to any key")
        for name, sub in schema.get("properties", {}).items():
            found += _unbounded(sub, defs, f"{path}.{name}")
    return found


def test_every_field_of_every_lesson_is_bounded():
    assert LESSONS
    for lesson in LESSONS.values():
        schema = lesson.params.model_json_schema()
        assert _unbounded(schema, schema.get("$defs", {}), lesson.id) == []


def test_the_schema_walk_finds_an_unbounded_field():
    """The walk itself can fail: a plain str, int, list and open object are each reported."""
    schema = {"type": "object", "additionalProperties": False, "properties": {
        "name": {"type": "string"}, "n": {"type": "integer", "minimum": 0},
        "xs": {"type": "array", "items": {"type": "string", "maxLength": 3}},
        "m": {"type": "object", "additionalProperties": True}}}
    assert len(_unbounded(schema, {})) == 4


@pytest.mark.parametrize("body, loc", [
    (b'{"lesson":"pp","world_size":2,"params":{"schedule":"' + b"x" * 100_000 + b'"}}', ["body", "params", "schedule"]),
    (b'{"lesson":"pp","world_size":2,"params":{"schedule":"1f1b; rm"}}', ["body", "params", "schedule"]),
    (b'{"lesson":"tp_mlp","world_size":2,"params":{"seed":18446744073709551616}}', ["body", "params", "seed"]),
    (b'{"lesson":"dp","world_size":2,"params":{"delay_ms":NaN}}', ["body", "params", "delay_ms"]),
    (b'{"lesson":"dp","world_size":2,"params":{"delay_ms":Infinity}}', ["body", "params", "delay_ms"]),
    (b'{"lesson":"tp_mlp","world_size":2,"hang_timeout_s":NaN}', ["body", "hang_timeout_s"]),
    (b'{"lesson":"tp_mlp","world_size":NaN}', ["body", "world_size"]),
    (b'{"lesson":"\\ud800","world_size":2}', ["body", "lesson"]),
    (b'{"lesson":"tp_mlp","world_size":2,"params":{"\\udfff":1}}', ["body", "params"]),
    (b'{"lesson":"' + b"x" * 1000 + b'","world_size":2}', ["body", "lesson"]),
    (b'{"lesson":"tp_mlp","world_size":2,"stepp":true}', ["body", "stepp"]),
])
def test_hostile_run_requests_get_a_422_naming_the_field(server, body, loc):
    response = web.post(f"{server.url}/api/runs", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert loc in [error["loc"] for error in response.json()["detail"]], response.text


def test_an_over_long_or_odd_language_is_refused(server):
    for lang in ("x" * 5000, "../../../README"):
        response = web.get(f"{server.url}/api/lessons/tp_mlp", params={"lang": lang})
        assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["query", "lang"]
    assert web.get(f"{server.url}/api/lessons/tp_mlp", params={"lang": "zh"}).status_code == 200


def test_after_hostile_requests_a_pipeline_run_still_starts_and_is_checked_by_the_launcher(server):
    """The launcher's own check (torch's schedules) answers this request, not an earlier one's."""
    for _ in range(3):
        web.post(f"{server.url}/api/runs", json={"lesson": "pp", "world_size": 2, "params": {"schedule": "y" * 32}})
    wrong = web.post(f"{server.url}/api/runs", json={"lesson": "pp", "world_size": 2, "params": {"schedule": "Nope"}})
    assert wrong.status_code == 422 and wrong.json()["detail"][0]["loc"] == ["body", "params", "schedule"]
    assert "Nope" in wrong.json()["detail"][0]["msg"]
    run = server.run("pp", 2, {"schedule": "gpipe", "microbatches": 2, "delay_ms": 0})
    assert run["status"] == "done", run["error"]


def test_a_reply_to_an_abandoned_request_is_never_taken_for_the_next_ones():
    """An asker that gives up (its HTTP client went away) leaves its reply in the pipe; the next
    request skips it by its id. A request too large for the channel is refused before it is sent."""
    async def scenario():
        launcher = Launcher()
        try:
            await launcher.start()
            abandoned = asyncio.create_task(launcher.check("pp", 2, {"schedule": "Abandoned"}))
            await asyncio.sleep(0)          # it has written its request
            await asyncio.sleep(0.01)
            abandoned.cancel()
            problems = await launcher.check("pp", 2, {"schedule": "Second"})
            with pytest.raises(LauncherError, match="too large"):
                await launcher.check("pp", 2, {"schedule": "z" * 100_000})
            third = await launcher.check("pp", 2, {"schedule": "Third"})
            return problems, third
        finally:
            await launcher.stop()

    problems, third = asyncio.run(scenario())
    assert len(problems) == 1 and "Second" in problems[0][1]
    assert len(third) == 1 and "Third" in third[0][1]


@pytest.mark.parametrize("when", ["at once", "once running"])
def test_delete_stops_every_rank_of_the_run(server, when):
    with RunProcesses(server) as procs:
        run = server.start_run("pp", 4, {"schedule": "gpipe", "microbatches": 32, "delay_ms": 200})
        if when == "once running":
            deadline = time.monotonic() + 30
            while not any(e["kind"] == "compute" for e in events(server, run["id"])):
                assert time.monotonic() < deadline, "the run never computed"
                time.sleep(0.05)
        response = web.delete(f"{server.url}/api/runs/{run['id']}")
        assert response.json()["status"] == "cancelled"
        time.sleep(0.5)                              # a launch in flight must not outlive the cancel
    assert procs.left_behind() == []
    assert server.wait_run(run["id"], timeout=5)["status"] == "cancelled"
    assert sum(is_final(e) for e in events(server, run["id"])) == 1


def test_a_solution_nested_too_deeply_to_parse_is_refused_with_the_reason(server):
    """The judge's `ast.parse` would raise RecursionError on it (a 500 before)."""
    code = "def f():\n    return " + "-" * 60_000 + "1\n"
    response = web.post(f"{server.url}/api/problems/ring_allreduce/judge", json={"code": code}, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "refused" and "nested too deeply" in response.json()["reason"]
    assert web.get(f"{server.url}/healthz").json()["status"] == "ok"
