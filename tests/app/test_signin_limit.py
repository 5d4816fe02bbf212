"""The sign-in rate limit: wrong passwords for one name, or from one address, get 429 with a message
and Retry-After once past the limit — even the right password then — and a correct sign-in works
again once the window has passed. The app in-process (its lifespan not run: no launcher is needed to
sign in), its limit on a clock of our own, so the window passes without waiting for it."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from app.signin_limit import SignInLimit

WINDOW_S = 300
PER_NAME, PER_ADDRESS = 2, 3


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
def hosted_lab(tmp_path_factory):
    """The hosted lab with users bob and carol (each password hash costs a CPU-heavy argon2: made once)."""
    settings = Settings(DATA_DIR=tmp_path_factory.mktemp("signin"), AUTH="on", ADMIN_PASSWORD="admin-secret-1",
                        SECRET_KEY="test-key", SIGNIN_WINDOW_S=WINDOW_S, SIGNIN_MAX_FAILURES=PER_NAME,
                        SIGNIN_MAX_FAILURES_PER_ADDRESS=PER_ADDRESS)
    app = create_app(settings)

    async def add_users():
        async with client_of(app) as admin:
            assert (await sign_in(admin, "admin", "admin-secret-1")).status_code == 200
            for name in ("bob", "carol"):
                added = await admin.post("/api/admin/users", json={"name": name, "password": f"{name}-pass-1"})
                assert added.status_code == 201, added.text

    asyncio.run(add_users())
    return app


@pytest.fixture
def lab_app(hosted_lab):
    """(app, clock): the hosted lab with a new sign-in limit, on `clock`, as its settings say."""
    settings, clock = hosted_lab.state.settings, Clock()
    hosted_lab.state.signin_limit = SignInLimit(settings.SIGNIN_MAX_FAILURES, settings.SIGNIN_MAX_FAILURES_PER_ADDRESS,
                                                settings.SIGNIN_WINDOW_S, clock=clock)
    return hosted_lab, clock


def client_of(app) -> httpx.AsyncClient:
    """The app called in-process; its lifespan is not run (signing in needs no launcher)."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://lab")


async def sign_in(client: httpx.AsyncClient, name: str, password: str) -> httpx.Response:
    return await client.post("/api/auth/login", json={"name": name, "password": password})


def test_wrong_passwords_for_one_name_get_429_until_the_window_passes(lab_app):
    app, clock = lab_app

    async def scenario():
        async with client_of(app) as client:
            for _ in range(PER_NAME):
                assert (await sign_in(client, "bob", "wrong-password")).status_code == 401
                clock.now += 10
            refused = await sign_in(client, "bob", "bob-pass-1")                 # the right one, too late
            assert refused.status_code == 429
            assert refused.json()["detail"] == f"too many wrong passwords for 'bob'; try again in {WINDOW_S - 20} s"
            assert refused.headers["retry-after"] == str(WINDOW_S - 20)          # till the first failure leaves
            assert (await sign_in(client, "carol", "carol-pass-1")).status_code == 200   # others sign in
            clock.now += WINDOW_S - 20 - 1
            assert (await sign_in(client, "bob", "bob-pass-1")).status_code == 429       # a second early
            clock.now += 1
            assert (await sign_in(client, "bob", "bob-pass-1")).status_code == 200

    asyncio.run(scenario())


def test_failures_from_one_address_get_429_for_every_name_until_the_window_passes(lab_app):
    app, clock = lab_app

    async def scenario():
        async with client_of(app) as client:
            for k in range(PER_ADDRESS):
                assert (await sign_in(client, f"nobody{k}", "wrong-password")).status_code == 401
            refused = await sign_in(client, "carol", "carol-pass-1")
            assert refused.status_code == 429
            assert refused.json()["detail"] == f"too many failed sign-ins from your address; try again in {WINDOW_S} s"
            assert refused.headers["retry-after"] == str(WINDOW_S)
            clock.now += WINDOW_S
            assert (await sign_in(client, "carol", "carol-pass-1")).status_code == 200

    asyncio.run(scenario())
