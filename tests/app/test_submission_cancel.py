"""Cancelling a submission while it is judged: a solution that never returns is cancelled by its owner
(another student gets 404), then one by the admin; each is marked cancelled within seconds, no process
of its sandbox is left (read from /proc, by process and by process group), and the freed judge slot
takes the next submission at once."""

from __future__ import annotations

import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from tests.app.helpers import Proc, descendants, launcher_pid, processes, wait_for
from tests.conftest import LiveServer
from workers import sandbox

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")

ADMIN = {"name": "admin", "password": "admin-secret-1"}
# never returns, and costs no CPU while it waits to be cancelled (a spinning one cost four ranks' worth of
# the whole wait); `__import__` walks past the import screen, which is not the boundary
FOREVER = "import torch\n\n\ndef ring_all_reduce(x, rank, world):\n    __import__('time').sleep(3600)\n"
RANKS = 4                                  # ring_allreduce's world size


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("paralab-cancel"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": ADMIN["password"], "PARALAB_JUDGE_CONCURRENCY": "1"}).start()
    with closing(signed_in(live, **ADMIN)) as admin:
        for name in ("ada", "bob"):
            assert admin.post("/api/admin/users", json={"name": name, "password": f"{name}-pass-1"}).status_code == 201
    yield live
    live.stop()


def signed_in(live: LiveServer, name: str, password: str) -> httpx.Client:
    c = httpx.Client(base_url=live.url, timeout=30)
    assert c.post("/api/auth/login", json={"name": name, "password": password}).status_code == 200
    return c


def judge_processes(live: LiveServer) -> list[Proc]:
    """The server's processes outside its lesson launcher and its warm checker (the server's, not a
    submission's): the judge's sandbox and what runs in it."""
    procs = processes()
    launcher = {p.pid for p in descendants(launcher_pid(live), procs)} | {launcher_pid(live)}
    return [p for p in descendants(live.proc.pid, procs)
            if p.pid not in launcher and p.living and b"workers.warm_checker" not in _cmdline(p.pid)]


def ranks_running(live: LiveServer) -> list[Proc]:
    """Every process of the judge once the runner and its ranks are all up (else an empty list)."""
    found = judge_processes(live)
    runners = [p for p in found if b"workers.judge_runner" in _cmdline(p.pid)]
    return found if len(runners) >= 1 + RANKS else []


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _group(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text[text.rindex(")") + 2:].split()[2])


def left_of(judged: list[Proc]) -> list[Proc]:
    """What still lives of `judged`: the same processes, or any in their process groups or sessions."""
    groups = {_group(p.pid) for p in judged} - {None}
    sessions = {p.session for p in judged}
    keys = {(p.pid, p.start) for p in judged}
    return [p for p in processes().values()
            if p.living and ((p.pid, p.start) in keys or p.session in sessions or _group(p.pid) in groups)]


def judging(client: httpx.Client, sid: str) -> bool:
    return client.get(f"/api/submissions/{sid}").json()["status"] == "judging"


def test_the_owner_cancels_a_submission_being_judged_and_nothing_of_it_is_left(lab):
    with closing(signed_in(lab, "ada", "ada-pass-1")) as ada, closing(signed_in(lab, "bob", "bob-pass-1")) as bob:
        stuck = ada.post("/api/submissions", json={"problem": "ring_allreduce", "code": FOREVER}).json()
        wait_for(lambda: judging(ada, stuck["id"]), timeout=30)
        judged = wait_for(lambda: ranks_running(lab), timeout=60)
        after = ada.post("/api/submissions", json={"problem": "ring_allreduce", "code": "import os\n"}).json()
        assert after["status"] == "queued" and after["position"] == 1          # the one judge is busy

        assert bob.delete(f"/api/submissions/{stuck['id']}").status_code == 404   # not his
        assert judging(ada, stuck["id"])
        t0 = time.monotonic()
        cancelled = ada.delete(f"/api/submissions/{stuck['id']}")
        assert cancelled.status_code == 200, cancelled.text
        assert time.monotonic() - t0 < 5
        assert cancelled.json()["status"] == "cancelled"
        assert "being judged" in cancelled.json()["reason"]
        assert left_of(judged) == []                          # gone when the cancel answers
        assert ada.get(f"/api/submissions/{stuck['id']}").json()["status"] == "cancelled"

        # the judge's slot is free: the next submission is judged at once (refused: it imports os)
        verdict = wait_for(lambda: (s := ada.get(f"/api/submissions/{after['id']}").json())["status"] == "refused" and s,
                           timeout=15)
        assert "importing 'os'" in verdict["reason"]
        again = ada.delete(f"/api/submissions/{stuck['id']}")
        assert again.status_code == 409 and "cancelled already" in again.json()["detail"]


def test_the_admin_cancels_anyones_submission_being_judged(lab):
    with closing(signed_in(lab, "bob", "bob-pass-1")) as bob, closing(signed_in(lab, **ADMIN)) as admin:
        stuck = bob.post("/api/submissions", json={"problem": "ring_allreduce", "code": FOREVER}).json()
        wait_for(lambda: judging(bob, stuck["id"]), timeout=30)
        judged = wait_for(lambda: ranks_running(lab), timeout=60)
        shown = admin.get("/api/admin/activity").json()["submissions"]
        assert [(s["id"], s["status"]) for s in shown] == [(stuck["id"], "judging")]
        cancelled = admin.post(f"/api/admin/submissions/{stuck['id']}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        assert left_of(judged) == []
        assert admin.get("/api/admin/activity").json()["submissions"] == []
        assert bob.get(f"/api/submissions/{stuck['id']}").json()["reason"].startswith("cancelled while")
