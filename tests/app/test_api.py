"""The REST surface without a run's outcome: health, lessons, and bad input, which gets a clear 4xx
naming what is wrong and starts nothing."""

from __future__ import annotations

import time

import pytest

from tests import web
from tests.app.helpers import RunProcesses, run_count


def test_healthz(server):
    response = web.get(f"{server.url}/healthz")
    assert response.status_code == 200
    health = response.json()
    assert health["status"] == "ok"
    assert health["launcher"] == "ready"
    assert isinstance(health["devices"], int) and health["devices"] >= 0
    assert health["backend"] == ("nccl" if health["devices"] else "gloo")


def test_lessons_list_their_params_schema_and_world_sizes(server):
    response = web.get(f"{server.url}/api/lessons")
    assert response.status_code == 200
    lessons = {lesson["id"]: lesson for lesson in response.json()}
    assert {"tp_mlp", "sp_mlp"} <= lessons.keys()
    for lesson_id in ("tp_mlp", "sp_mlp"):
        lesson = lessons[lesson_id]
        assert lesson["title"] and lesson["summary"]
        assert lesson["world_sizes"] == [1, 2, 3, 4, 5, 6, 7, 8]
        schema = lesson["params"]
        assert schema["type"] == "object"
        props = schema["properties"]
        assert {"seq_len", "hidden", "ffn", "seed", "mistake"} <= props.keys()
        assert props["ffn"]["type"] == "integer" and props["ffn"]["default"] == 64
        assert props["ffn"]["minimum"] == 1 and props["ffn"]["maximum"] == 1024
        assert "none" in props["mistake"]["enum"]
    assert "swap_f_g" in lessons["tp_mlp"]["params"]["properties"]["mistake"]["enum"]
    assert "forget_ln_allreduce" in lessons["sp_mlp"]["params"]["properties"]["mistake"]["enum"]


def test_lesson_detail_shows_its_sources(server):
    lesson = web.get(f"{server.url}/api/lessons/tp_mlp").json()
    paths = [s["path"] for s in lesson["sources"]]
    assert paths == ["workers/lessons/tp_mlp/program.py", "workers/lessons/mlp_block.py"]
    assert "class CopyToTensorParallel" in lesson["sources"][0]["text"]
    missing = web.get(f"{server.url}/api/lessons/no_such_lesson")
    assert missing.status_code == 404
    assert "no_such_lesson" in missing.json()["detail"] and "tp_mlp" in missing.json()["detail"]


# ---- bad input ------------------------------------------------------------------------------

BAD_BODIES = [
    # (body, the loc the error names, a word its message says)
    ({"lesson": "no_such_lesson", "world_size": 2}, ["body", "lesson"], "no_such_lesson"),
    ({"world_size": 2}, ["body", "lesson"], "required"),
    ({"lesson": "tp_mlp"}, ["body", "world_size"], "required"),
    ({"lesson": "tp_mlp", "world_size": 0}, ["body", "world_size"], "choose one of"),
    ({"lesson": "tp_mlp", "world_size": 9}, ["body", "world_size"], "choose one of 1–8"),
    ({"lesson": "tp_mlp", "world_size": -1}, ["body", "world_size"], "choose one of"),
    ({"lesson": "tp_mlp", "world_size": "two"}, ["body", "world_size"], "integer"),
    ({"lesson": "tp_mlp", "world_size": 2.5}, ["body", "world_size"], "integer"),
    ({"lesson": 7, "world_size": 2}, ["body", "lesson"], "string"),
    ({"lesson": "tp_mlp", "world_size": 2, "params": [64]}, ["body", "params"], "dictionary"),
    ({"lesson": "tp_mlp", "world_size": 2, "step": "maybe"}, ["body", "step"], "boolean"),
    ({"lesson": "tp_mlp", "world_size": 4, "params": {"ffn": 63}}, ["body", "params", "ffn"], "divisible"),
    ({"lesson": "tp_mlp", "world_size": 2, "params": {"ffn": "wide"}}, ["body", "params", "ffn"], "integer"),
    ({"lesson": "tp_mlp", "world_size": 2, "params": {"ffn": 2048}}, ["body", "params", "ffn"], "1024"),
    ({"lesson": "tp_mlp", "world_size": 2, "params": {"hidden": 0}}, ["body", "params", "hidden"], "greater"),
    ({"lesson": "tp_mlp", "world_size": 2, "params": {"mistake": "typo"}}, ["body", "params", "mistake"], "swap_f_g"),
    ({"lesson": "tp_mlp", "world_size": 2, "params": {"fnn": 64}}, ["body", "params", "fnn"], "not permitted"),
    ({"lesson": "sp_mlp", "world_size": 4, "params": {"seq_len": 6}}, ["body", "params", "seq_len"], "divisible"),
    ({"lesson": "sp_mlp", "world_size": 3, "params": {"ffn": 64}}, ["body", "params", "ffn"], "divisible"),
]


@pytest.mark.parametrize("body, loc, says", BAD_BODIES, ids=[str(b[1][-1]) + "-" + str(i) for i, b in enumerate(BAD_BODIES)])
def test_bad_run_request_is_a_422_naming_the_field_and_starts_nothing(server, body, loc, says):
    before = run_count(server)
    with RunProcesses(server) as procs:
        response = web.post(f"{server.url}/api/runs", json=body)
        time.sleep(0.05)
    assert response.status_code == 422, response.text
    errors = response.json()["detail"]
    assert any(e["loc"] == loc and says in e["msg"] for e in errors), errors
    assert run_count(server) == before
    assert procs.seen == {}


def test_both_bad_dimensions_are_named_at_once(server):
    response = web.post(f"{server.url}/api/runs",
                        json={"lesson": "sp_mlp", "world_size": 4, "params": {"seq_len": 6, "ffn": 30}})
    assert response.status_code == 422
    assert sorted(e["loc"][-1] for e in response.json()["detail"]) == ["ffn", "seq_len"]


@pytest.mark.parametrize("content", [b"{not json", b"", b'["tp_mlp", 2]', b"null"])
def test_malformed_body_is_a_422(server, content):
    before = run_count(server)
    response = web.post(f"{server.url}/api/runs", content=content, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["detail"]
    assert run_count(server) == before


def test_world_size_beyond_max_ranks(limited_server):
    before = run_count(limited_server)
    response = web.post(f"{limited_server.url}/api/runs", json={"lesson": "tp_mlp", "world_size": 4})
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "world_size"]
    assert error["msg"].endswith("choose one of 1, 2")
    assert run_count(limited_server) == before


@pytest.mark.parametrize("method, path", [
    ("GET", "/api/runs/{id}"),
    ("GET", "/api/runs/{id}/events"),
    ("GET", "/api/runs/{id}/trace.json"),
    ("GET", "/api/runs/{id}/tensors/r0t0"),
    ("DELETE", "/api/runs/{id}"),
])
@pytest.mark.parametrize("run_id", ["0123456789ab", "not-a-run", "a.b", "x" * 65])
def test_unknown_run_is_a_404(server, method, path, run_id):
    response = web.request(method, server.url + path.format(id=run_id))
    assert response.status_code == 404, response.text
    assert "no run" in response.json()["detail"]
