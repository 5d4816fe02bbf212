"""The hosted lab (PARALAB_AUTH=on): signing in and out, a wrong password, signing up with a class
code; what a stranger gets; each user sees and controls only their own runs and submissions (another's
are 404), an admin sees all; run quotas. And the lecture mode (auth off) needs no account."""

from __future__ import annotations

import time

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests import web
from tests.app.helpers import client
from tests.conftest import LiveServer

ADMIN = {"name": "admin", "password": "admin-secret-1"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("paralab-lab"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": ADMIN["password"],
        "PARALAB_MAX_RUNS_PER_USER": "2", "PARALAB_MAX_STEP_RUNS_PER_USER": "2",
        "PARALAB_MAX_RANKS_PER_STUDENT": "4"}).start()
    with client(live, **ADMIN) as admin:
        code = admin.post("/api/admin/classes", json={"name": "cs101"}).json()["code"]
        assert admin.post("/api/admin/users", json={"name": "bob", "password": "bob-pass-1", "class": "cs101"}).status_code == 201
    live.code = code
    yield live
    live.stop()


def test_a_stranger_gets_the_sign_in_page_401s_and_a_closed_socket(lab):
    with client(lab) as anon:
        assert anon.get("/healthz").status_code == 200
        assert anon.get("/api/runs").status_code == 401
        assert anon.post("/api/submissions", json={"problem": "ring_allreduce", "code": "x"}).status_code == 401
        page = anon.get("/problems/ring_allreduce")
        assert page.status_code == 303 and page.headers["location"] == "/login?next=%2Fproblems%2Fring_allreduce"
        assert anon.get("/login").status_code == 200
        assert anon.get("/static/css/lab.css").status_code == 200
    with pytest.raises((InvalidStatus, ConnectionClosed)):
        with connect(f"{lab.ws_url}/ws/runs/abc", open_timeout=5) as ws:
            ws.recv(timeout=5)


def test_sign_in_wrong_password_sign_out_and_sign_up_with_a_class_code(lab):
    with client(lab) as c:
        assert c.post("/api/auth/login", json={"name": "bob", "password": "nope-nope"}).status_code == 401
        assert c.post("/api/auth/login", json={"name": "nobody", "password": "nope-nope"}).json()["detail"] == "wrong name or password"
        assert c.post("/api/auth/login", json={"name": "bob", "password": "bob-pass-1"}).status_code == 200
        assert c.get("/api/auth/me").json() == {"name": "bob", "role": "student", "class": "cs101", "auth": "on"}
        assert c.get("/api/admin/users").status_code == 403          # a student is not an admin
        assert c.get("/admin").status_code == 303
        assert c.post("/api/rooms", json={}).status_code == 403            # staff open lecture rooms
        c.post("/api/auth/logout")
        assert c.get("/api/auth/me").status_code == 401
        bad = c.post("/api/auth/signup", json={"code": "WRONG-CODE", "name": "carol", "password": "carol-pass"})
        assert bad.status_code == 422 and "sign-up code" in bad.json()["detail"]
        short = c.post("/api/auth/signup", json={"code": lab.code, "name": "carol", "password": "short"})
        assert short.status_code == 422 and "8 characters" in short.json()["detail"]
        typed = lab.code.lower().replace("-", " ")                           # as typed: case and dashes do not matter
        joined = c.post("/api/auth/signup", json={"code": typed, "name": "carol", "password": "carol-pass"})
        assert joined.status_code == 201 and joined.json()["class"] == "cs101"
        assert c.get("/api/auth/me").json()["name"] == "carol"          # signed in at once
        taken = c.post("/api/auth/signup", json={"code": lab.code, "name": "bob", "password": "another-pw"})
        assert taken.status_code == 422 and "taken" in taken.json()["detail"]
    db = b"".join(p.read_bytes() for p in lab.data_dir.glob("lab.sqlite3*"))   # the database and its WAL
    assert b"bob-pass-1" not in db and b"$argon2id$" in db              # only hashes are kept


def test_runs_and_submissions_of_one_user_are_404_to_another_and_visible_to_the_admin(lab):
    with client(lab, "bob", "bob-pass-1") as bob, client(lab) as dan, client(lab, **ADMIN) as admin:
        admin.post("/api/admin/users", json={"name": "dan", "password": "dan-pass-1", "class": "cs101"})
        dan.post("/api/auth/login", json={"name": "dan", "password": "dan-pass-1"})
        run = bob.post("/api/runs", json={"lesson": "collectives", "world_size": 2, "params": {"op": "all_reduce"}})
        assert run.status_code == 201, run.text
        rid = run.json()["id"]
        sub = bob.post("/api/submissions", json={"problem": "ring_allreduce", "code": "import os\n"}).json()
        for path in (f"/api/runs/{rid}", f"/api/runs/{rid}/events", f"/api/runs/{rid}/trace.json", f"/api/submissions/{sub['id']}"):
            assert dan.get(path).status_code == 404, path
            assert bob.get(path).status_code == 200, path
            assert admin.get(path).status_code == 200, path
        assert dan.delete(f"/api/runs/{rid}").status_code == 404
        assert dan.delete(f"/api/submissions/{sub['id']}").status_code == 404
        assert rid not in [r["id"] for r in dan.get("/api/runs").json()]
        assert rid in [r["id"] for r in bob.get("/api/runs").json()]
        assert rid in [r["id"] for r in admin.get("/api/runs").json()]
        assert sub["id"] not in [s["id"] for s in dan.get("/api/submissions").json()]
        assert sub["id"] in [s["id"] for s in admin.get("/api/submissions?all=1").json()]
        cookie = "; ".join(f"{k}={v}" for k, v in dan.cookies.items())
        with connect(f"{lab.ws_url}/ws/runs/{rid}", additional_headers={"Cookie": cookie}, open_timeout=5) as ws:
            assert "no run with id" in ws.recv(timeout=5)
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=5)
            assert ws.close_code == 4404
        bob_cookie = "; ".join(f"{k}={v}" for k, v in bob.cookies.items())
        with connect(f"{lab.ws_url}/ws/runs/{rid}", additional_headers={"Cookie": bob_cookie}, open_timeout=5) as ws:
            assert '"seq":1' in ws.recv(timeout=10)


def test_run_quotas_ranks_per_student_and_runs_in_flight(lab):
    with client(lab, "bob", "bob-pass-1") as bob, client(lab, **ADMIN) as admin:
        _wait_until_none_in_flight(bob)           # the test before this one left a run, and a submission judged
        too_big = bob.post("/api/runs", json={"lesson": "collectives", "world_size": 8, "params": {}})
        assert too_big.status_code == 422 and too_big.json()["detail"][0]["loc"] == ["body", "world_size"]
        held = []
        for _ in range(5):                       # step mode: each run waits at its first gate
            r = bob.post("/api/runs", json={"lesson": "collectives", "world_size": 2, "params": {}, "step": True})
            if r.status_code == 429:
                break
            held.append(r.json()["id"])
        assert len(held) == 2 and "the limit is 2" in r.json()["detail"]
        activity = admin.get("/api/admin/activity").json()
        assert {rid for rid in held} <= {run["id"] for run in activity["runs"] if run["owner"] == "bob"}
        assert admin.post("/api/runs", json={"lesson": "collectives", "world_size": 8, "params": {}}).status_code == 201
        for rid in held:                          # the admin's cancel button
            assert admin.delete(f"/api/runs/{rid}").json()["status"] == "cancelled"
        assert bob.post("/api/runs", json={"lesson": "collectives", "world_size": 2, "params": {}}).status_code == 201


def _wait_until_none_in_flight(user, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while any(r["status"] in ("queued", "running") for r in user.get("/api/runs").json()):
        assert time.monotonic() < deadline, "the runs before this test did not end"
        time.sleep(0.1)


def test_the_lecture_mode_needs_no_account(server):
    assert web.get(server.url + "/api/runs").status_code == 200
    me = web.get(server.url + "/api/auth/me").json()
    assert me["auth"] == "off" and me["role"] == "admin"
    assert web.post(server.url + "/api/auth/login", json={"name": "a", "password": "b"}).status_code == 404
    assert web.get(server.url + "/problems").status_code == 200
    assert "Practice problems" in web.get(server.url + "/").text


def test_only_those_who_may_open_a_lecture_room_are_offered_one(lab, server):
    """Opening a room is the admin's in the hosted lab: a student's pages offer no Present (it answered
    403 on the button itself); the admin's do, and so does the lecture mode's."""
    offers = ('data-action="present"', 'data-action="present-room"')
    with client(lab, name="bob", password="bob-pass-1") as bob, client(lab, **ADMIN) as admin:
        for path in ("/", "/lessons/tp_mlp", "/playground"):
            assert not any(button in bob.get(path).text for button in offers), path
        assert bob.post("/api/rooms").status_code == 403
        assert offers[1] in admin.get("/").text and offers[0] in admin.get("/lessons/tp_mlp").text
    assert offers[1] in web.get(server.url + "/").text and offers[0] in web.get(server.url + "/lessons/tp_mlp").text


def test_a_students_forms_offer_only_the_ranks_they_may_start(lab):
    """PARALAB_MAX_RANKS_PER_STUDENT is 4 here: a student's lesson page and playground offer world sizes up
    to 4 (8 was offered, then refused); the admin's up to the server's limit."""
    with client(lab, name="bob", password="bob-pass-1") as bob, client(lab, **ADMIN) as admin:
        for path in ("/lessons/three_d", "/playground"):
            assert 'data-max-ranks="4"' in bob.get(path).text, path
            assert 'data-max-ranks="16"' in admin.get(path).text, path


def test_the_course_page_says_who_is_signed_in_and_signs_out(lab, server):
    """In the hosted lab the index — where a learner lands — holds the lab's links, the account and Sign
    out (a shared machine's next learner must find it); the lecture mode's holds none."""
    with client(lab, name="bob", password="bob-pass-1") as bob:
        page = bob.get("/").text
        assert 'data-user="bob"' in page and 'data-action="sign-out"' in page and "/problems" in page
        assert '/admin"' not in page                                    # a student's: no Admin link
    with client(lab, **ADMIN) as admin:
        assert '/admin"' in admin.get("/").text
    assert 'data-action="sign-out"' not in web.get(server.url + "/").text


def test_a_page_refused_or_missing_is_a_page_for_a_browser_and_json_for_a_client(lab):
    """A student who opens /admin is told it is an admin's, as whom they are signed in (not sent to a
    sign-in form); a missing problem is a page saying so. API clients still read JSON."""
    page = {"accept": "text/html,application/xhtml+xml"}
    with client(lab, name="bob", password="bob-pass-1") as bob:
        admin = bob.get("/admin", headers=page, follow_redirects=False)
        assert admin.status_code == 403 and "text/html" in admin.headers["content-type"]
        assert "only an admin may do this" in admin.text and ">bob</span>" in admin.text
        missing = bob.get("/problems/nope", headers=page)
        assert missing.status_code == 404 and "<h1>Not found</h1>" in missing.text and "nope" in missing.text
        assert bob.get("/problems/nope").headers["content-type"].startswith("application/json")
        assert bob.get("/api/admin/users", headers=page).headers["content-type"].startswith("application/json")
    with client(lab) as stranger:                                          # not signed in: to the sign-in form
        assert stranger.get("/admin", headers=page, follow_redirects=False).status_code == 303


def test_a_class_counts_its_students_not_its_staff(lab):
    with client(lab, **ADMIN) as admin:
        assert admin.post("/api/admin/users", json={"name": "tam", "password": "tam-pass-12", "role": "admin",
                                                    "class": "cs101"}).status_code == 201
        students = {c["name"]: c["students"] for c in admin.get("/api/admin/classes").json()}["cs101"]
        names = [u["name"] for u in admin.get("/api/admin/users").json() if u.get("class") == "cs101" and u["role"] == "student"]
        assert students == len(names) and "tam" not in names
