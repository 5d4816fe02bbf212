"""The cross-site request check: with the session cookie, a POST/DELETE whose Origin (or, lacking it,
Referer) names another host is refused with 403 and changes nothing, and so is a websocket; the same
host, a request with neither header, reads (GET), and requests without the session cookie pass. The
lecture mode (auth off) checks nothing."""

from __future__ import annotations

from contextlib import closing

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from app.csrf import cross_site_refusal
from starlette.datastructures import Headers
from tests import web
from tests.conftest import LiveServer

EVIL = "http://evil.example"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("paralab-csrf"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": "admin-secret-1"}).start()
    yield live
    live.stop()


@pytest.fixture
def admin(lab):
    with closing(httpx.Client(base_url=lab.url, timeout=30)) as c:
        assert c.post("/api/auth/login", json={"name": "admin", "password": "admin-secret-1"}).status_code == 200
        yield c


def classes(client) -> list[str]:
    return [c["name"] for c in client.get("/api/admin/classes").json()]


def test_a_state_changing_request_from_another_site_is_refused_with_the_reason(lab, admin):
    refused = admin.post("/api/admin/classes", json={"name": "evil1"}, headers={"Origin": EVIL})
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith(f"cross-site request refused: its Origin ({EVIL}) is not this server")
    by_referer = admin.post("/api/admin/classes", json={"name": "evil2"}, headers={"Referer": EVIL + "/page"})
    assert by_referer.status_code == 403 and "its Referer" in by_referer.json()["detail"]
    assert admin.post("/api/admin/classes", json={"name": "evil3"}, headers={"Origin": "null"}).status_code == 403
    assert admin.delete("/api/submissions/abc", headers={"Origin": EVIL}).status_code == 403
    assert admin.post("/api/auth/logout", headers={"Origin": EVIL}).status_code == 403
    assert not {"evil1", "evil2", "evil3"} & set(classes(admin))
    assert admin.get("/api/auth/me", headers={"Origin": EVIL}).status_code == 200      # reading changes nothing


def test_the_same_host_no_origin_and_no_session_cookie_pass(lab, admin):
    assert admin.post("/api/admin/classes", json={"name": "same"}, headers={"Origin": lab.url}).status_code == 201
    assert admin.post("/api/admin/classes", json={"name": "referer"},
                      headers={"Referer": lab.url + "/admin"}).status_code == 201
    assert admin.post("/api/admin/classes", json={"name": "plain"}).status_code == 201          # curl, scripts
    proxied = admin.post("/api/admin/classes", json={"name": "proxied"},
                         headers={"Origin": "https://lab.example", "X-Forwarded-Host": "lab.example"})
    assert proxied.status_code == 201
    assert {"same", "referer", "plain", "proxied"} <= set(classes(admin))
    stranger = web.post(lab.url + "/api/auth/login", json={"name": "admin", "password": "admin-secret-1"},
                        headers={"Origin": lab.url})
    assert stranger.status_code == 200                       # no session cookie, from the lab's own page


def test_a_sign_in_from_another_site_is_refused_without_a_session_too(lab):
    """Login CSRF: another site must not sign a visitor in to an account of its choosing."""
    for path, body in (("/api/auth/login", {"name": "admin", "password": "admin-secret-1"}),
                       ("/api/auth/signup", {"code": "X", "name": "mallory", "password": "mallory-pass"})):
        refused = web.post(lab.url + path, json=body, headers={"Origin": EVIL})
        assert refused.status_code == 403 and "cross-site request refused" in refused.json()["detail"]
        assert "set-cookie" not in refused.headers


def test_a_websocket_from_another_site_is_refused(lab, admin):
    cookie = "; ".join(f"{k}={v}" for k, v in admin.cookies.items())
    with pytest.raises(InvalidStatus) as refused:
        connect(f"{lab.ws_url}/ws/runs/abc", origin=EVIL, additional_headers={"Cookie": cookie}, open_timeout=5)
    assert refused.value.response.status_code == 403
    with connect(f"{lab.ws_url}/ws/runs/abc", origin=lab.url, additional_headers={"Cookie": cookie}, open_timeout=5) as ws:
        assert "no run with id" in ws.recv(timeout=5)


def test_hosts_are_compared_without_default_ports():
    cookie = {"cookie": "paralab_session=x"}
    assert cross_site_refusal(Headers({**cookie, "host": "lab.example", "origin": "https://lab.example:443"}), "paralab_session") is None
    assert cross_site_refusal(Headers({**cookie, "host": "LAB.example:80", "origin": "http://lab.example"}), "paralab_session") is None
    assert cross_site_refusal(Headers({**cookie, "host": "lab.example", "origin": "http://lab.example:8080"}), "paralab_session")
    assert cross_site_refusal(Headers({**cookie, "host": "[::1]:8000", "origin": "http://[::1]:8000"}), "paralab_session") is None
    assert cross_site_refusal(Headers({"host": "lab.example", "origin": EVIL}), "paralab_session") is None


def test_the_lecture_mode_refuses_other_pages_with_or_without_a_cookie(server):
    """It has no sessions, but runs code as its user: another page may change nothing (app/local_origin.py)."""
    response = web.post(server.url + "/api/auth/logout", headers={"Origin": EVIL, "Cookie": "paralab_session=x"})
    assert response.status_code == 403 and "comes from another web page" in response.json()["detail"]
    assert web.post(server.url + "/api/auth/logout", headers={"Origin": server.url}).status_code == 200
