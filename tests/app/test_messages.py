"""What the server says has a stable code and params beside the English (issue #11, point 4): REST
refusals, a 422's errors, a websocket's refusal; and docs/api.md lists every code the server says."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from app.main import create_app
from app.messages import say
from app.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def server_codes() -> set[str]:
    """Every code `say(...)` is given in app/."""
    return {code for path in (REPO / "app").rglob("*.py")
            for code in re.findall(r'\bsay\(\s*"([a-z0-9_.]+)"', path.read_text(encoding="utf-8"))}


def documented_codes() -> set[str]:
    api = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    table = api.split("### Message codes", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z0-9_.]+)` \|", table, re.M))


def client(tmp_path) -> TestClient:
    return TestClient(create_app(Settings(DATA_DIR=tmp_path)), raise_server_exceptions=False)


def test_docs_api_lists_every_code_the_server_says_and_no_other():
    assert server_codes() - documented_codes() == set(), "said but not in docs/api.md"
    assert documented_codes() - server_codes() == set(), "in docs/api.md but never said"


def test_a_refusal_carries_its_code_and_params_beside_the_english(tmp_path):
    response = client(tmp_path).get("/api/runs/nosuchrun")
    assert response.status_code == 404
    assert response.json() == {"detail": "no run with id 'nosuchrun'", "code": "run.not_found",
                               "params": {"run_id": "nosuchrun"}}
    unknown = client(tmp_path).get("/no/such/page")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "http.404")


def test_a_refused_run_gives_each_field_pydantics_type_and_ctx_or_the_rules_code(tmp_path):
    response = client(tmp_path).post("/api/runs", json={"lesson": "tp_mlp", "world_size": 3,
                                                        "params": {"seq_len": 0}})
    assert response.status_code == 422 and response.json()["code"] == "validation"
    errors = {tuple(e["loc"]): e for e in response.json()["detail"]}
    seq_len, ffn = errors[("body", "params", "seq_len")], errors[("body", "params", "ffn")]
    assert (seq_len["type"], seq_len["params"]) == ("greater_than_equal", {"ge": 1})
    assert (ffn["type"], ffn["params"]) == ("params.divisible_by_ranks", {"field": "ffn", "value": 64, "ranks": 3})
    assert ffn["msg"] == "ffn=64 must be divisible by the number of ranks (3)"
    wrong_size = client(tmp_path).post("/api/runs", json={"lesson": "tp_mlp", "world_size": 99})
    (error,) = wrong_size.json()["detail"]
    assert error["type"] == "run.world_size_not_allowed" and error["params"]["world_size"] == 99


def test_a_websocket_refusal_carries_its_code(tmp_path):
    with client(tmp_path).websocket_connect("/ws/runs/nosuchrun") as socket:
        assert socket.receive_json() == {"error": "no run with id 'nosuchrun'", "code": "run.not_found",
                                         "params": {"run_id": "nosuchrun"}}
    with client(tmp_path).websocket_connect("/ws/rooms/ZZZZZZZ2") as socket:      # a param named `code`, too
        assert socket.receive_json() == {"error": "no room 'ZZZZZZZ2': unknown or expired code",
                                         "code": "room.not_found", "params": {"code": "ZZZZZZZ2"}}
    assert client(tmp_path).get("/api/rooms/ZZZZZZZ2").json()["code"] == "room.not_found"


def test_a_nested_message_reads_in_english_and_travels_as_code_params_and_text():
    note = say("hang.last_completed", "rank {rank} last completed #{cseq} {op}", rank=2, cseq=1, op="all_reduce")
    outer = say("demo.outer", "ranks wait ({notes})", notes=[note, note])
    assert outer.text == "ranks wait (rank 2 last completed #1 all_reduce; rank 2 last completed #1 all_reduce)"
    body = outer.body()
    assert body["params"]["notes"][0] == {"code": "hang.last_completed", "params": {"rank": 2, "cseq": 1, "op": "all_reduce"},
                                          "message": "rank 2 last completed #1 all_reduce"}


def test_every_code_the_server_says_has_its_chinese_with_the_same_params():
    """app/static/i18n/zh.json holds each code of docs/api.md's table, its placeholders the English's params."""
    chinese = json.loads((REPO / "app" / "static" / "i18n" / "zh.json").read_text(encoding="utf-8"))
    api = (REPO / "docs" / "api.md").read_text(encoding="utf-8").split("### Message codes", 1)[1].split("\n## ", 1)[0]
    for code, params in re.findall(r"^\| `([a-z0-9_.]+)` \| ([^|]*) \|", api, re.M):
        assert code in chinese, f"no Chinese for {code}"
        assert set(re.findall(r"\{(\w+)\}", chinese[code])) == set(re.findall(r"`(\w+)`", params)), code


def test_pydantics_common_errors_have_their_chinese(tmp_path):
    """The error types a lesson's parameters meet (bounds, types, choices, missing, unknown), each under
    `pydantic.<type>` with the ctx it comes with."""
    chinese = json.loads((REPO / "app" / "static" / "i18n" / "zh.json").read_text(encoding="utf-8"))
    response = client(tmp_path).post("/api/runs", json={"lesson": "tp_mlp", "world_size": 2, "params": {
        "seq_len": 0, "hidden": 9999, "ffn": "wide", "mistake": "other", "seed": 1.5, "nope": 1}})
    for error in response.json()["detail"]:
        words = chinese[f"pydantic.{error['type']}"]
        assert set(re.findall(r"\{(\w+)\}", words)) <= set(error["params"]), (error, words)
