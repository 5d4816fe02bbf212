"""A judged submission keeps the run the judge watched: a recorded run of the submission's owner,
with every rank's collectives and the verdict's checks, that its owner and the admin may open and
no other student may (404, as for another's submission)."""

from __future__ import annotations

import json
import time
from contextlib import closing

import httpx
import pytest

from tests.conftest import LiveServer
from tests.problems.wrong import wrong_solution
from workers import sandbox

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")
WRONG = wrong_solution("fsdp_wrapper/all_reduce_then_slice")     # an all-reduce where the reduce-scatter belongs


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("paralab-judged-run"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": "admin-secret-1"}).start()
    with closing(signed_in(live, "admin", "admin-secret-1")) as admin:
        assert admin.post("/api/admin/classes", json={"name": "cs101"}).status_code == 201
        for name in ("ada", "bob"):
            assert admin.post("/api/admin/users", json={"name": name, "password": f"{name}-pass-1",
                                                         "class": "cs101"}).status_code == 201
    yield live
    live.stop()


def signed_in(live, name, password):
    client = httpx.Client(base_url=live.url, timeout=30)
    assert client.post("/api/auth/login", json={"name": name, "password": password}).status_code == 200
    return client


def judged(client, problem: str, code: str) -> dict:
    sid = client.post("/api/submissions", json={"problem": problem, "code": code}).json()["id"]
    deadline = time.monotonic() + 120
    while (submission := client.get(f"/api/submissions/{sid}").json())["status"] in ("queued", "judging"):
        assert time.monotonic() < deadline, "not judged in time"
        time.sleep(0.2)
    return submission


def test_a_verdict_keeps_its_run_for_its_owner_and_the_admin_only(lab):
    with closing(signed_in(lab, "ada", "ada-pass-1")) as ada, closing(signed_in(lab, "bob", "bob-pass-1")) as bob, \
            closing(signed_in(lab, "admin", "admin-secret-1")) as admin:
        submission = judged(ada, "fsdp_wrapper", WRONG)
        assert submission["status"] == "failed" and submission["run"]
        run_id = submission["run"]

        run = ada.get(f"/api/runs/{run_id}").json()
        assert run["lesson"] == "script" and run["status"] == "done" and run["world_size"] == 4
        assert run["params"]["source"] == WRONG and run["params"]["filename"] == "submission.py"
        events = [json.loads(line) for line in ada.get(f"/api/runs/{run_id}/events").text.splitlines()]
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert events[0]["kind"] == "run" and events[0]["status"] == "running"
        assert events[-1]["kind"] == "run" and events[-1]["status"] == "done"
        reduces = [e for e in events if e["kind"] == "collective" and e["op"] == "all_reduce"]
        assert {e["rank"] for e in reduces} == {0, 1, 2, 3}                 # every rank's, as it ran
        assert {e["phase"] for e in reduces} == {"begin", "end"}
        assert all(e["site"].startswith("submission.py:") for e in reduces)
        line = int(reduces[0]["site"].split(":")[1])
        assert "dist.all_reduce(total" in WRONG.splitlines()[line - 1]       # the learner's own line
        checks = {e["name"]: e for e in events if e["kind"] == "check"}
        assert checks["communication"]["passed"] is False
        assert "all_reduce" in " ".join(checks["communication"]["performed"])
        assert ada.get("/api/runs").json()[0]["id"] == run_id               # among the owner's runs

        assert admin.get(f"/api/runs/{run_id}").status_code == 200
        for path in (f"/api/runs/{run_id}", f"/api/runs/{run_id}/events", f"/api/submissions/{submission['id']}"):
            assert bob.get(path).status_code == 404, path
        assert run_id not in [r["id"] for r in bob.get("/api/runs").json()]


def test_a_submission_refused_before_it_ran_has_no_run(lab):
    with closing(signed_in(lab, "bob", "bob-pass-1")) as bob:
        submission = judged(bob, "fsdp_wrapper", "import os\n")
        assert submission["status"] == "refused" and submission["run"] is None


def test_a_submission_too_long_is_refused_in_its_own_words(lab):
    with closing(signed_in(lab, "bob", "bob-pass-1")) as bob:
        answer = bob.post("/api/submissions", json={"problem": "fsdp_wrapper", "code": "#" * 70_000})
        assert answer.status_code == 422
        [error] = answer.json()["detail"]
        assert (error["loc"], error["type"]) == (["body", "code"], "lab.code_too_long")
        assert error["msg"] == "the submission is 70000 characters long; a submission holds at most 65536 (64 KiB)"
