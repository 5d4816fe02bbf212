"""The sign-in rate limit: wrong passwords for one name, or from one address, get 429 with a message
and Retry-After once past the limit — even the right password then — and a correct sign-in works
again once the window has passed. The window in seconds, on a real server; and the arithmetic on a
clock of our own."""

from __future__ import annotations

import time
from contextlib import closing

import httpx
import pytest

from app.signin_limit import SignInLimit
from tests.conftest import LiveServer

WINDOW_S = 8
PER_NAME, PER_ADDRESS = 3, 6


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_failures_past_the_limit_block_for_the_rest_of_the_window():
    clock = Clock()
    limit = SignInLimit(per_name=3, per_address=5, window_s=300, clock=clock)
    for k in range(3):
        assert limit.blocked("bob", "10.0.0.1") is None
        limit.failed("bob", "10.0.0.1")
        clock.now += 10
    blocked = limit.blocked("bob", "10.0.0.9")           # the name is blocked from any address
    assert blocked.retry_after_s == 300 - 30 and "wrong passwords for 'bob'" in blocked.message
    assert limit.blocked("carol", "10.0.0.1") is None    # 3 of the address's 5
    limit.failed("carol", "10.0.0.1")
    limit.failed("dave", "10.0.0.1")
    assert "from your address" in limit.blocked("erin", "10.0.0.1").message
    assert limit.blocked("erin", "10.0.0.2") is None
    clock.now = 1000.0 + 300                            # bob's first failure leaves the window
    assert limit.blocked("bob", "10.0.0.9") is None
    limit.succeeded("carol")                            # a success clears the name, not the address
    assert limit.blocked("carol", "10.0.0.3") is None


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("paralab-signin"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": "admin-secret-1", "PARALAB_SIGNIN_WINDOW_S": str(WINDOW_S),
        "PARALAB_SIGNIN_MAX_FAILURES": str(PER_NAME), "PARALAB_SIGNIN_MAX_FAILURES_PER_ADDRESS": str(PER_ADDRESS)}).start()
    with closing(httpx.Client(base_url=live.url)) as admin:
        admin.post("/api/auth/login", json={"name": "admin", "password": "admin-secret-1"})
        for name in ("bob", "carol"):
            assert admin.post("/api/admin/users", json={"name": name, "password": f"{name}-pass-1"}).status_code == 201
    yield live
    live.stop()


def sign_in(live: LiveServer, name: str, password: str) -> httpx.Response:
    return httpx.post(live.url + "/api/auth/login", json={"name": name, "password": password})


def test_wrong_passwords_for_one_name_get_429_until_the_window_passes(lab):
    for _ in range(PER_NAME):
        assert sign_in(lab, "bob", "wrong-password").status_code == 401
    refused = sign_in(lab, "bob", "bob-pass-1")                      # the right one, too late
    assert refused.status_code == 429
    assert refused.json()["detail"].startswith("too many wrong passwords for 'bob'; try again in")
    assert 1 <= int(refused.headers["retry-after"]) <= WINDOW_S
    assert sign_in(lab, "carol", "carol-pass-1").status_code == 200   # others sign in meanwhile
    time.sleep(int(refused.headers["retry-after"]) + 0.5)
    assert sign_in(lab, "bob", "bob-pass-1").status_code == 200


def test_failures_from_one_address_get_429_for_every_name_until_the_window_passes(lab):
    time.sleep(WINDOW_S)                                   # the last test's failures have left the window
    for k in range(PER_ADDRESS):
        assert sign_in(lab, f"nobody{k}", "wrong-password").status_code == 401
    refused = sign_in(lab, "carol", "carol-pass-1")
    assert refused.status_code == 429 and "from your address" in refused.json()["detail"]
    assert 1 <= int(refused.headers["retry-after"]) <= WINDOW_S
    time.sleep(int(refused.headers["retry-after"]) + 0.5)
    assert sign_in(lab, "carol", "carol-pass-1").status_code == 200
