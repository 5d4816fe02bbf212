"""Passwords in the hosted lab: a user changes their own (the current one must be right, the new one
follows the sign-up rules; their other sessions end, this one goes on; the old password no longer
signs in); an admin resets a user's password and deletes a user (sessions end, submissions and runs go, those
in flight cancelled first; not their own account). An old database gains the column sessions need."""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing

import pytest

from app.accounts import Accounts
from tests import web
from tests.app.helpers import client
from tests.conftest import LiveServer

ADMIN = {"name": "admin", "password": "admin-secret-1"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("paralab-passwords"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": ADMIN["password"], "PARALAB_SIGNIN_MAX_FAILURES": "3"}).start()
    with client(live, **ADMIN) as admin:
        for name in ("bob", "carol", "dan", "eve"):
            assert admin.post("/api/admin/users", json={"name": name, "password": f"{name}-pass-1"}).status_code == 201
    yield live
    live.stop()


def signs_in(live: LiveServer, name: str, password: str) -> bool:
    return web.post(live.url + "/api/auth/login", json={"name": name, "password": password}).status_code == 200


def test_a_user_changes_their_password_and_their_other_sessions_end(lab):
    with client(lab, "bob", "bob-pass-1") as here, client(lab, "bob", "bob-pass-1") as elsewhere, client(lab) as anon:
        wrong = here.post("/api/auth/password", json={"current": "not-my-password", "new": "bob-pass-2"})
        assert wrong.status_code == 403 and wrong.json()["detail"] == "the current password is wrong"
        short = here.post("/api/auth/password", json={"current": "bob-pass-1", "new": "short"})
        assert short.status_code == 422 and "at least 8 characters" in short.json()["detail"]
        assert anon.post("/api/auth/password", json={"current": "x", "new": "y" * 8}).status_code == 401
        changed = here.post("/api/auth/password", json={"current": "bob-pass-1", "new": "bob-pass-2"})
        assert changed.status_code == 200 and changed.json()["name"] == "bob"
        assert here.get("/api/auth/me").json()["name"] == "bob"              # this session goes on
        assert elsewhere.get("/api/auth/me").status_code == 401              # the other one has ended
    assert not signs_in(lab, "bob", "bob-pass-1")
    assert signs_in(lab, "bob", "bob-pass-2")


def test_wrong_current_passwords_count_against_the_sign_in_limit(lab):
    with client(lab, "eve", "eve-pass-1") as eve:
        for _ in range(3):
            assert eve.post("/api/auth/password", json={"current": "guess-guess", "new": "eve-pass-2"}).status_code == 403
        blocked = eve.post("/api/auth/password", json={"current": "eve-pass-1", "new": "eve-pass-2"})
        assert blocked.status_code == 429 and "retry-after" in blocked.headers
    assert not signs_in(lab, "eve", "eve-pass-1")                           # blocked, until…
    with client(lab, **ADMIN) as admin:                                     # …an admin resets it
        assert admin.post("/api/admin/users/eve/password", json={"password": "eve-pass-3"}).status_code == 200
    assert signs_in(lab, "eve", "eve-pass-3")


def test_the_admin_resets_a_password_and_the_users_sessions_end(lab):
    with client(lab, "carol", "carol-pass-1") as carol, client(lab, **ADMIN) as admin:
        assert carol.post("/api/admin/users/dan/password", json={"password": "taken-over"}).status_code == 403
        assert admin.post("/api/admin/users/nobody/password", json={"password": "whatever1"}).status_code == 404
        short = admin.post("/api/admin/users/carol/password", json={"password": "short"})
        assert short.status_code == 422 and "at least 8 characters" in short.json()["detail"]
        reset = admin.post("/api/admin/users/carol/password", json={"password": "carol-pass-2"})
        assert reset.status_code == 200 and reset.json()["name"] == "carol"
        assert carol.get("/api/auth/me").status_code == 401
        assert admin.post("/api/admin/users/admin/password", json=ADMIN).status_code == 200   # their own:
        assert admin.get("/api/auth/me").json()["name"] == "admin"                           # still signed in
    assert not signs_in(lab, "carol", "carol-pass-1")
    assert signs_in(lab, "carol", "carol-pass-2")


def test_the_admin_deletes_a_user_with_their_submissions_and_runs_in_flight(lab):
    with client(lab, "dan", "dan-pass-1") as dan, client(lab, **ADMIN) as admin:
        judged = dan.post("/api/submissions", json={"problem": "ring_allreduce", "code": "import os\n"}).json()
        finished = dan.post("/api/runs", json={"lesson": "tp_mlp", "world_size": 1}).json()
        while dan.get(f"/api/runs/{finished['id']}").json()["status"] not in ("done", "failed", "cancelled"):
            time.sleep(0.1)
        held = dan.post("/api/runs", json={"lesson": "collectives", "world_size": 2, "params": {}, "step": True})
        assert held.status_code == 201, held.text
        assert dan.delete("/api/admin/users/carol").status_code == 403
        assert admin.delete("/api/admin/users/admin").status_code == 409    # not your own account
        assert admin.delete("/api/admin/users/nobody").status_code == 404
        deleted = admin.delete("/api/admin/users/dan")
        assert deleted.status_code == 200
        assert deleted.json() == {"name": "dan", "deleted": True, "submissions": 1, "runs": 2}
        assert dan.get("/api/auth/me").status_code == 401                   # signed out at once
        assert "dan" not in [u["name"] for u in admin.get("/api/admin/users").json()]
        assert admin.get(f"/api/submissions/{judged['id']}").status_code == 404
        for run in (held.json(), finished):                                # gone, in memory and on disk
            assert admin.get(f"/api/runs/{run['id']}").status_code == 404
            assert not (lab.data_dir / "runs" / run["id"]).exists()
        assert not signs_in(lab, "dan", "dan-pass-1")
        assert admin.post("/api/admin/users", json={"name": "dan", "password": "new-dan-pass"}).status_code == 201
    with client(lab, "dan", "new-dan-pass") as new_dan:                     # the name again: nothing of the old
        assert new_dan.get("/api/submissions").json() == []
        assert new_dan.get("/api/runs").json() == []


def test_a_database_from_before_password_changes_gains_session_epochs(tmp_path):
    path = tmp_path / "lab.sqlite3"
    with closing(sqlite3.connect(path)) as db:
        db.executescript("CREATE TABLE users (name TEXT PRIMARY KEY, password_hash TEXT NOT NULL, role TEXT NOT NULL, "
                         "class TEXT, created_at REAL NOT NULL);"
                         "INSERT INTO users VALUES ('old', 'x', 'student', NULL, 0);")
    accounts = Accounts(path)
    try:
        assert accounts.user("old").session_epoch == 0
        assert accounts.change_password("old", "a-new-password") == 1
        assert accounts.authenticate("old", "a-new-password").session_epoch == 1
    finally:
        accounts.close()


def test_a_database_from_before_the_judges_notes_keeps_its_submissions_and_gains_notes(tmp_path):
    path = tmp_path / "lab.sqlite3"
    with closing(sqlite3.connect(path)) as db:
        db.executescript("CREATE TABLE submissions (id TEXT PRIMARY KEY, user TEXT NOT NULL, problem TEXT NOT NULL, "
                         "code TEXT NOT NULL, status TEXT NOT NULL, checks TEXT NOT NULL DEFAULT '[]', reason TEXT, "
                         "created_at REAL NOT NULL, started INTEGER, finished_at REAL);"
                         "INSERT INTO submissions VALUES ('s1', 'ann', 'ring_allreduce', 'x', 'passed', '[]', NULL, 0, 1, 1);"
                         "INSERT INTO submissions VALUES ('s2', 'ann', 'ring_allreduce', 'x', 'queued', '[]', NULL, 0, NULL, NULL);")
    accounts = Accounts(path)
    try:
        assert accounts.submission("s1")["status"] == "passed" and accounts.submission("s1")["note"] is None
        accounts.mark_judging("s2", 2)
        assert accounts.finish_submission("s2", "passed", [], None, "the program printed a lot")
        assert accounts.submission("s2")["note"] == "the program printed a lot"
    finally:
        accounts.close()


def test_a_hash_made_with_other_parameters_is_remade_at_the_next_sign_in(tmp_path):
    """The suite hashes with argon2's CHEAPEST profile (tests/conftest.py); a server started again with
    the default profile remakes each user's hash when they next sign in, and the old password still works."""
    path = tmp_path / "lab.sqlite3"
    cheap = Accounts(path, "CHEAPEST")
    try:
        cheap.create_user("ann", "ann-password")
    finally:
        cheap.close()
    accounts = Accounts(path)
    try:
        stored = lambda: accounts._q("SELECT password_hash FROM users WHERE name='ann'")[0][0]   # noqa: E731
        assert ",p=1$" in stored()                                     # CHEAPEST: one lane
        assert accounts.authenticate("ann", "ann-password") is not None
        assert "m=65536,t=3,p=4$" in stored()                          # the default profile's parameters
        assert accounts.authenticate("ann", "ann-password") is not None
        assert accounts.authenticate("ann", "wrong-password") is None
    finally:
        accounts.close()
