"""What the server refuses at its door (issue #10, points 9 and 10), in-process: bodies too large
(413 before any parsing), forwarded headers from a client that is not a trusted proxy, a cookie
after sign-out or of a deleted account, a sign-in posted from another site; the Secure flag behind
an HTTPS proxy; damaged records skipped at start; unknown run ids not kept."""

from __future__ import annotations

import asyncio
import json
import time
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from app.hub import Hub
from app.main import create_app
from app.rooms import RoomManager
from app.runs import RunManager
from app.settings import Settings

ADMIN = {"name": "admin", "password": "admin-secret-1"}


def lab(tmp_path, **settings) -> TestClient:
    """An app with accounts on, without its lifespan (no launcher: these requests need none)."""
    app = create_app(Settings(DATA_DIR=tmp_path, AUTH="on", ADMIN_PASSWORD=ADMIN["password"],
                              SIGNIN_MAX_FAILURES_PER_ADDRESS=3, **settings))
    return TestClient(app, raise_server_exceptions=False)


def signed_in(client: TestClient, name: str, password: str) -> TestClient:
    client.cookies.clear()
    assert client.post("/api/auth/login", json={"name": name, "password": password}).status_code == 200
    return client


def test_a_body_over_the_cap_is_refused_413_before_parsing_and_the_server_serves_on(tmp_path):
    client = TestClient(create_app(Settings(DATA_DIR=tmp_path, MAX_BODY_BYTES=64 * 1024)),
                        raise_server_exceptions=False)
    big = b'{"lesson": "tp_mlp", "world_size": 2, "params": {"a": [' + b"[" * 10 + b"1" * (10 << 20) + b"]}}"
    started = time.monotonic()
    declared = client.post("/api/runs", content=big, headers={"content-type": "application/json"})
    assert declared.status_code == 413 and "at most 65536 bytes" in declared.json()["detail"]
    streamed = client.post("/api/runs", content=(big[i:i + 4096] for i in range(0, 200_000, 4096)),
                           headers={"content-type": "application/json"})     # chunked: no Content-Length
    assert streamed.status_code == 413
    assert time.monotonic() - started < 2
    assert client.get("/api/lessons").status_code == 200


def test_x_forwarded_for_is_believed_only_from_a_trusted_proxy(tmp_path):
    """The sign-in limit counts failures per client address: an untrusted client cannot dodge it
    by naming a new address in each request; behind a trusted proxy, the forwarded one counts."""
    def failures_until_blocked(client: TestClient) -> list[int]:
        return [client.post("/api/auth/login", json={"name": f"user{i}", "password": "wrong-pass"},
                            headers={"X-Forwarded-For": f"10.0.0.{i}"}).status_code for i in range(5)]

    assert failures_until_blocked(lab(tmp_path / "direct")) == [401, 401, 401, 429, 429]
    assert failures_until_blocked(lab(tmp_path / "proxied", TRUSTED_PROXIES="testclient")) == [401] * 5


def test_the_session_cookie_is_secure_over_https_behind_a_trusted_proxy_only(tmp_path):
    https = {"X-Forwarded-Proto": "https"}
    proxied = lab(tmp_path / "proxied", TRUSTED_PROXIES="testclient")
    assert "; secure" in proxied.post("/api/auth/login", json=ADMIN, headers=https).headers["set-cookie"]
    assert "; secure" not in proxied.post("/api/auth/login", json=ADMIN).headers["set-cookie"]
    direct = lab(tmp_path / "direct")
    assert "; secure" not in direct.post("/api/auth/login", json=ADMIN, headers=https).headers["set-cookie"]
    always = lab(tmp_path / "always", SECURE_COOKIES="on")
    assert "; secure" in always.post("/api/auth/login", json=ADMIN).headers["set-cookie"]


def test_a_cookie_copied_before_sign_out_no_longer_signs_in(tmp_path):
    client = signed_in(lab(tmp_path), **ADMIN)
    copied = dict(client.cookies)
    assert client.post("/api/auth/logout").status_code == 200
    client.cookies.clear()
    client.cookies.update(copied)
    assert client.get("/api/auth/me").status_code == 401


def test_a_deleted_accounts_cookie_does_not_sign_in_a_new_account_of_the_same_name(tmp_path):
    client = lab(tmp_path)
    admin_cookies = dict(signed_in(client, **ADMIN).cookies)
    assert client.post("/api/admin/users", json={"name": "bob", "password": "bob-pass-1"}).status_code == 201
    bobs = dict(signed_in(client, "bob", "bob-pass-1").cookies)
    assert client.get("/api/auth/me").json()["name"] == "bob"
    client.cookies.clear()
    client.cookies.update(admin_cookies)
    assert client.delete("/api/admin/users/bob").status_code == 200
    assert client.post("/api/admin/users", json={"name": "bob", "password": "new-bob-pass"}).status_code == 201
    client.cookies.clear()
    client.cookies.update(bobs)
    assert client.get("/api/auth/me").status_code == 401


def test_a_sign_in_posted_from_another_site_is_refused(tmp_path):
    client = lab(tmp_path)
    refused = client.post("/api/auth/login", json=ADMIN, headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403 and "cross-site" in refused.json()["detail"]
    assert client.get("/api/auth/me").status_code == 401
    assert client.post("/api/auth/login", json=ADMIN, headers={"Origin": "http://testserver"}).status_code == 200


def test_probing_unknown_run_ids_keeps_nothing(tmp_path):
    manager = RunManager(Settings(DATA_DIR=tmp_path), Hub())
    manager.runs_dir.mkdir(parents=True)
    for i in range(2000):
        assert manager.get(f"probe{i:06d}") is None
    assert manager.get("../etc") is None
    assert len(manager.store._recordings) == 0 and len(manager.runs) == 0


def test_a_damaged_run_or_room_file_is_skipped_and_the_rest_load(tmp_path, caplog):
    good_run = {"id": "good1", "lesson": "tp_mlp", "world_size": 2, "params": {}, "step": False, "backend": "gloo",
                "created_at": 1.0, "owner": None, "status": "done", "error": None, "event_count": 0}
    for run_id, text in (("good1", json.dumps(good_run)), ("cut", '{"id": "cut", "less'), ("list", "[1, 2]")):
        (tmp_path / "runs" / run_id).mkdir(parents=True)
        (tmp_path / "runs" / run_id / "run.json").write_text(text)
    (tmp_path / "rooms").mkdir()
    (tmp_path / "rooms" / "GOODROOM.json").write_text(json.dumps({"code": "GOODROOM", "secret_digest": "x"}))
    (tmp_path / "rooms" / "BADROOM1.json").write_text('{"code": "BADROOM1", "secr')
    (tmp_path / "rooms" / "BADROOM2.json").write_text('{"code": "BADROOM2", "colour": "red"}')

    manager = RunManager(Settings(DATA_DIR=tmp_path), Hub())
    manager.store.load_recorded()
    assert [meta["id"] for meta in manager.list()] == ["good1"]
    assert manager.get("good1").status == "done" and manager.get("cut") is None

    async def load_rooms():
        rooms = RoomManager(tmp_path, Hub(), manager, 3600)
        await rooms.start()
        await rooms.stop()
        return rooms

    assert list(asyncio.run(load_rooms()).rooms) == ["GOODROOM"]
    warned = " ".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    for name in ("cut", "list", "BADROOM1", "BADROOM2"):
        assert name in warned


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_known_language_still_reads(tmp_path, lang):
    client = TestClient(create_app(Settings(DATA_DIR=tmp_path)))
    assert client.get("/api/lessons/tp_mlp", params={"lang": lang}).status_code == 200
