"""The single-user server refuses a run of the user's own code from any other web page (issue #13,
point 3), in-process: a cross-site no-cors text/plain POST, a form POST, a websocket from another
origin, and a DNS-rebinding name in the Host header. Nothing is started: the app runs without its
lifespan (no launcher), so a request let through would fail otherwise, never with these words."""

from __future__ import annotations

import json
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient
    from starlette.websockets import WebSocketDisconnect

from app.local_origin import reachable_by_a_safe_name
from app.main import create_app
from app.settings import Settings

EVIL = "https://evil.example"
SCRIPT_RUN = {"lesson": "script", "world_size": 2, "params": {"source": "print('pwned')"}}


@pytest.fixture
def client(tmp_path) -> TestClient:
    return TestClient(create_app(Settings(DATA_DIR=tmp_path)), base_url="http://127.0.0.1:8000",
                      raise_server_exceptions=False)


def test_a_no_cors_text_plain_post_from_another_site_is_refused(client):
    refused = client.post("/api/runs", content=json.dumps(SCRIPT_RUN),
                          headers={"content-type": "text/plain;charset=UTF-8", "origin": EVIL})
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith(f"refused: this request comes from another web page (its Origin is {EVIL})")


def test_a_form_post_and_a_null_origin_are_refused(client):
    form = client.post("/api/runs", data={"lesson": "script"}, headers={"origin": EVIL})
    assert form.status_code == 403
    sandboxed = client.post("/api/runs", json=SCRIPT_RUN, headers={"origin": "null"})   # a sandboxed iframe, file://
    assert sandboxed.status_code == 403
    by_referer = client.post("/api/runs", json=SCRIPT_RUN, headers={"referer": f"{EVIL}/page"})
    assert by_referer.status_code == 403 and "its Referer is" in by_referer.json()["detail"]
    other_port = client.delete("/api/runs/abc", headers={"origin": "http://127.0.0.1:9999"})
    assert other_port.status_code == 403


def test_a_websocket_from_another_origin_is_closed_4403(client):
    with pytest.raises(WebSocketDisconnect) as closed:
        with client.websocket_connect("/ws/runs/abc", headers={"origin": EVIL}) as ws:
            ws.receive_json()
    assert closed.value.code == 4403


def test_a_script_run_must_be_sent_as_application_json(client):
    """Even with no Origin (a client that omits it): a text/plain body is never read as the run (422);
    of the JSON types FastAPI reads, a script run takes only application/json (415)."""
    plain = client.post("/api/runs", content=json.dumps(SCRIPT_RUN), headers={"content-type": "text/plain"})
    assert plain.status_code == 422 and plain.json()["detail"][0]["loc"] == ["body"]
    other = client.post("/api/runs", content=json.dumps(SCRIPT_RUN), headers={"content-type": "application/vnd.x+json"})
    assert other.status_code == 415 and "must be sent as JSON" in other.json()["detail"]


def test_a_script_run_by_a_rebinding_name_is_refused(client):
    """evil.example's DNS answers 127.0.0.1: the page is then same-origin with its own Host."""
    refused = client.post("/api/runs", json=SCRIPT_RUN,
                          headers={"host": "evil.example:8000", "origin": "http://evil.example:8000"})
    assert refused.status_code == 403
    assert "'evil.example:8000', a name that is not an IP address or localhost" in refused.json()["detail"]


def test_the_same_origin_passes_the_guards(client):
    """From the server's own page the request goes on to validation (here: a bad world size, 422)."""
    passed = client.post("/api/runs", json={**SCRIPT_RUN, "world_size": 0}, headers={"origin": "http://127.0.0.1:8000"})
    assert passed.status_code == 422
    assert passed.json()["detail"][0]["loc"] == ["body", "world_size"]


def test_safe_names():
    assert reachable_by_a_safe_name("127.0.0.1:8000", set())
    assert reachable_by_a_safe_name("[::1]:8000", set())
    assert reachable_by_a_safe_name("localhost:8000", set())
    assert reachable_by_a_safe_name("10.1.2.3", set())
    assert not reachable_by_a_safe_name("evil.example:8000", set())
    assert reachable_by_a_safe_name("laptop.lan:8000", {"laptop.lan"})
