"""The fair judge queue: round-robin across users, each user's quota, the position shown while
waiting, under 30 submissions at once from three students; real judge runs on either side; the
admin's cancel and the class's results as CSV."""

from __future__ import annotations

import csv
import io
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from app.submissions import FairQueue
from tests.conftest import LiveServer
from tests.problems.wrong import wrong_solution
from workers import sandbox

REPO = Path(__file__).resolve().parents[2]
REFERENCE = (REPO / "workers/problems/ring_allreduce/reference.py").read_text()
WRONG = wrong_solution("ring_allreduce/chunk_index")
QUOTA = 8
STUDENTS = ["s1", "s2", "s3"]


def test_the_fair_queue_is_round_robin_and_says_the_order_it_will_take():
    q = FairQueue()
    for item in ["a1", "a2", "a3", "b1", "c1", "c2"]:
        q.put(item[0], item)
    assert q.order() == ["a1", "b1", "c1", "a2", "c2", "a3"]
    assert q.take() == ("a", "a1")
    q.put("b", "b2")                                  # b is still ahead of a, who was just served
    assert q.order() == ["b1", "c1", "a2", "b2", "c2", "a3"]
    assert q.remove("c2") and not q.remove("zz")
    taken = [q.take()[1] for _ in range(len(q))]
    assert taken == ["b1", "c1", "a2", "b2", "a3"] and q.take() is None


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("paralab-judge"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": "admin-secret-1", "PARALAB_JUDGE_CONCURRENCY": "1",
        "PARALAB_MAX_SUBMISSIONS_PER_USER": str(QUOTA)}).start()
    yield live
    live.stop()


def signed_in(live, name, password):
    c = httpx.Client(base_url=live.url, timeout=30)
    assert c.post("/api/auth/login", json={"name": name, "password": password}).status_code == 200
    return c


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")
def test_thirty_submissions_at_once_are_judged_fairly_within_quotas(lab):
    with closing(signed_in(lab, "admin", "admin-secret-1")) as admin:
        code = admin.post("/api/admin/classes", json={"name": "lab1"}).json()["code"]
        clients = {}
        for name in [*STUDENTS, "early"]:
            c = httpx.Client(base_url=lab.url, timeout=30)
            assert c.post("/api/auth/signup", json={"code": code, "name": name, "password": f"{name}-password"}).status_code == 201
            clients[name] = c
        try:
            # a real judge run keeps the one judge busy while thirty more arrive
            first = clients["early"].post("/api/submissions", json={"problem": "ring_allreduce", "code": REFERENCE}).json()
            deadline = time.monotonic() + 30
            while clients["early"].get(f"/api/submissions/{first['id']}").json()["status"] != "judging":
                assert time.monotonic() < deadline
                time.sleep(0.05)

            def submit(job):
                name, k = job
                return name, k, clients[name].post("/api/submissions", json={
                    "problem": "ring_allreduce", "code": f"# {name} attempt {k}\nimport os\n"})
            jobs = [(name, k) for k in range(10) for name in STUDENTS]
            with ThreadPoolExecutor(30) as pool:
                answers = list(pool.map(submit, jobs))
            accepted = {name: [r.json() for n, _, r in answers if n == name and r.status_code == 201] for name in STUDENTS}
            refused = [r for _, _, r in answers if r.status_code == 429]
            assert all(len(mine) == QUOTA for mine in accepted.values()), {n: len(v) for n, v in accepted.items()}
            assert len(refused) == 30 - 3 * QUOTA and "wait for one to finish" in refused[0].json()["detail"]

            # while the first is judged, every waiting one shows its place: round-robin across the students
            ids = [s["id"] for mine in accepted.values() for s in mine]
            now = {sid: admin.get(f"/api/submissions/{sid}").json() for sid in ids}
            assert clients["early"].get(f"/api/submissions/{first['id']}").json()["status"] == "judging"
            order = sorted(ids, key=lambda sid: now[sid]["position"])
            assert [now[sid]["position"] for sid in order] == list(range(1, 3 * QUOTA + 1))
            users = [now[sid]["user"] for sid in order]
            for r in range(QUOTA):                       # each round serves every student once
                assert sorted(users[3 * r: 3 * r + 3]) == STUDENTS, users
            for name in STUDENTS:                        # and each student's own in the order sent
                mine = [now[sid]["position"] for sid in order if now[sid]["user"] == name]
                assert mine == sorted(mine)
            assert clients["s1"].get("/api/submissions").json()[0]["position"] is not None
            activity = admin.get("/api/admin/activity").json()
            assert [s["id"] for s in activity["submissions"] if s["position"]] == order

            # the admin cancels the last one waiting; a student cannot see another's
            last = order[-1]
            owner = now[last]["user"]
            other = next(n for n in STUDENTS if n != owner)
            assert clients[other].get(f"/api/submissions/{last}").status_code == 404
            assert admin.post(f"/api/admin/submissions/{last}/cancel").json()["status"] == "cancelled"

            deadline = time.monotonic() + 90
            while any(admin.get(f"/api/submissions/{sid}").json()["status"] in ("queued", "judging") for sid in ids + [first["id"]]):
                assert time.monotonic() < deadline, "the queue did not drain"
                time.sleep(0.2)
            done = {sid: admin.get(f"/api/submissions/{sid}").json() for sid in ids}
            started = sorted((done[sid]["started"], sid) for sid in ids if done[sid]["status"] != "cancelled")
            assert [sid for _, sid in started] == order[:-1]          # judged in exactly the order shown
            assert all(done[sid]["status"] == "refused" and "importing 'os'" in done[sid]["reason"] for sid in order[:-1])
            assert admin.get(f"/api/submissions/{first['id']}").json()["status"] == "passed"
            # the problems page says where each learner stands, and which lesson teaches each problem
            page = clients["early"].get("/problems").text
            assert 'data-problem="ring_allreduce" data-standing="solved"' in page
            assert 'data-problem="pp_1f1b_loop" data-standing="not tried"' in page
            assert 'data-problem="ring_allreduce" data-standing="tried"' in clients["s1"].get("/problems").text
            assert 'Learn it first: <a href="/lessons/ring_allreduce"' in page
            assert admin.post(f"/api/admin/submissions/{first['id']}/cancel").status_code == 409   # judged already

            # a real wrong solution: the failing check carries the values that differ
            wrong = clients["s1"].post("/api/submissions", json={"problem": "ring_allreduce", "code": WRONG}).json()
            deadline = time.monotonic() + 120
            while (verdict := clients["s1"].get(f"/api/submissions/{wrong['id']}").json())["status"] in ("queued", "judging"):
                assert time.monotonic() < deadline
                time.sleep(0.2)
            assert verdict["status"] == "failed"
            summed = next(c for c in verdict["checks"] if c["name"] == "sum")
            assert not summed["passed"] and summed["failing_ranks"]
            assert {"index", "got", "expected"} <= set(summed["first_failure"]["differences"][0])

            # the class's results, per student and problem
            rows = list(csv.DictReader(io.StringIO(admin.get("/api/admin/results.csv?class=lab1").text)))
            by_user = {row["user"]: row for row in rows}
            assert set(by_user) == {*STUDENTS, "early"} and all(row["problem"] == "ring_allreduce" for row in rows)
            assert by_user["early"]["passed"] == "1" and by_user["early"]["first_passed_at"]
            assert by_user["s1"]["passed"] == "0" and by_user["s1"]["last_status"] == "failed"
            assert int(by_user["s1"]["attempts"]) == QUOTA + 1 - (owner == "s1")
            assert clients["s1"].get("/api/admin/results.csv").status_code == 403
        finally:
            for c in clients.values():
                c.close()
