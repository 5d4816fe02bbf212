"""A learner's progress kept per account in the hosted lab, in-process: what one browser saves,
another signed in as the same learner reads; saves add up, never remove; bad input is refused
naming what is wrong; another learner, a stranger and the lecture mode see none of it."""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

ADMIN = {"name": "admin", "password": "admin-secret-1"}


def browser(app, name: str, password: str) -> TestClient:
    client = TestClient(app, raise_server_exceptions=False)
    assert client.post("/api/auth/login", json={"name": name, "password": password}).status_code == 200
    return client


def test_two_browsers_of_one_learner_share_their_progress_and_saves_add_up(tmp_path):
    app = create_app(Settings(DATA_DIR=tmp_path, AUTH="on", ADMIN_PASSWORD=ADMIN["password"]))
    admin = browser(app, **ADMIN)
    for name in ("ada", "bob"):
        assert admin.post("/api/admin/users", json={"name": name, "password": f"{name}-pass-1"}).status_code == 201
    laptop, phone, bob = browser(app, "ada", "ada-pass-1"), browser(app, "ada", "ada-pass-1"), browser(app, "bob", "bob-pass-1")
    assert laptop.get("/api/progress").json() == {"user": "ada", "lessons": {}}
    saved = laptop.put("/api/progress", json={"lessons": {"ring_allreduce": {"ran": True, "answered": [1], "questions": 3}}})
    assert saved.status_code == 200
    merged = phone.put("/api/progress", json={"lessons": {"ring_allreduce": {"ran": False, "answered": [0], "questions": 3},
                                                           "tp_mlp": {"answered": [2], "questions": 4}}}).json()
    assert merged == {"lessons": {"ring_allreduce": {"ran": True, "answered": [0, 1], "questions": 3},
                                  "tp_mlp": {"ran": False, "answered": [2], "questions": 4}}}
    assert laptop.get("/api/progress").json() == {"user": "ada", **merged}
    assert bob.get("/api/progress").json() == {"user": "bob", "lessons": {}}
    assert TestClient(app).get("/api/progress").status_code == 401
    assert admin.delete("/api/admin/users/ada").status_code in (200, 204)
    assert admin.post("/api/admin/users", json={"name": "ada", "password": "ada-pass-2"}).status_code == 201
    assert browser(app, "ada", "ada-pass-2").get("/api/progress").json() == {"user": "ada", "lessons": {}}   # a new ada starts afresh


def test_bad_progress_is_refused_naming_what_is_wrong(tmp_path):
    app = create_app(Settings(DATA_DIR=tmp_path, AUTH="on", ADMIN_PASSWORD=ADMIN["password"]))
    admin = browser(app, **ADMIN)
    for lessons, why in [({"no_such_lesson": {"ran": True}}, "no lesson 'no_such_lesson'"),
                         ({"ring_allreduce": {"answered": [-1]}}, "greater than or equal to 0"),
                         ({"ring_allreduce": {"answered": list(range(60))}}, "at most 50 items"),
                         ({"ring_allreduce": {"questions": 10 ** 9}}, "less than or equal to 50"),
                         ({"ring_allreduce": {"ran": "perhaps"}}, "valid boolean")]:
        refused = admin.put("/api/progress", json={"lessons": lessons})
        assert refused.status_code == 422 and why in str(refused.json()["detail"]), (lessons, refused.json())
    assert admin.get("/api/progress").json() == {"user": "admin", "lessons": {}}


def test_in_the_lecture_mode_progress_stays_in_the_browser(tmp_path):
    client = TestClient(create_app(Settings(DATA_DIR=tmp_path)), raise_server_exceptions=False)
    answer = client.get("/api/progress")
    assert answer.status_code == 404 and "stays in the browser" in answer.json()["detail"]
