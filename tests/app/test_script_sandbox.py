"""In the hosted lab (PARALAB_AUTH=on) a user's own program runs in the judge's bubblewrap sandbox
(issue #13, point 3), on real ranks: as nobody, with a clean environment, no view of the server's
data, no network but its own loopback — and still traced, with each rank's output, through the
relay to the event port; the user's quotas hold."""

from __future__ import annotations

import json
import textwrap
import time
from contextlib import closing

import httpx
import pytest

from tests.conftest import LiveServer

pytestmark = [pytest.mark.sandbox, pytest.mark.slow, pytest.mark.timeout(400)]   # torch is imported in the sandbox

ADMIN_PASSWORD = "admin-secret-1"


@pytest.fixture(scope="module")
def hosted(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("paralab-hosted-script"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": ADMIN_PASSWORD, "PARALAB_MAX_RANKS_PER_STUDENT": "2"}).start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def student(hosted):
    with closing(httpx.Client(base_url=hosted.url, timeout=30)) as admin:
        assert admin.post("/api/auth/login", json={"name": "admin", "password": ADMIN_PASSWORD}).status_code == 200
        code = admin.post("/api/admin/classes", json={"name": "lab1"}).json()["code"]
    with closing(httpx.Client(base_url=hosted.url, timeout=30)) as client:
        assert client.post("/api/auth/signup", json={"code": code, "name": "ann", "password": "ann-password"}).status_code == 201
        yield client


def wait(client, run_id: str, timeout: float = 240) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.get(f"/api/runs/{run_id}").json()
        if run["status"] in ("done", "failed", "cancelled"):
            return run
        time.sleep(0.2)
    raise TimeoutError(run_id)


SNOOP = textwrap.dedent("""
    import os, socket
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    x = torch.ones(2) * (dist.get_rank() + 1)
    dist.all_reduce(x)
    try:
        socket.create_connection(("1.1.1.1", 80), timeout=2)
        network = "reached"
    except OSError:
        network = "none"
    print(f"uid {os.getuid()} sum {x[0].item():.0f} data {os.path.exists(DATA)} "
          f"env {sorted(k for k in os.environ if k.startswith('PARALAB'))} network {network}")
""")


def test_a_hosted_users_program_runs_sandboxed_and_traced(hosted, student):
    source = SNOOP.replace("DATA", repr(str(hosted.data_dir)))
    response = student.post("/api/runs", json={"lesson": "script", "world_size": 2,
                                               "params": {"source": source, "filename": "snoop.py"}})
    assert response.status_code == 201, response.text
    run = wait(student, response.json()["id"])
    assert run["status"] == "done", run["error"]
    log = [json.loads(line) for line in student.get(f"/api/runs/{run['id']}/events").text.splitlines()]
    printed = {e["rank"]: e["output"] for e in log if e["kind"] == "log" and e["level"] == "output"}
    assert sorted(printed) == [0, 1]
    for text in printed.values():      # (after gloo's warning that the sandbox's host name does not resolve)
        assert text.endswith("uid 65534 sum 3 data False env [] network none\n"), text
    calls = [e for e in log if e["kind"] == "collective" and e["phase"] == "begin"]
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "dist.all_reduce(x)" in text)
    assert [e["site"] for e in calls] == [f"snoop.py:{line}"] * 2


def test_the_students_quota_holds(student):
    refused = student.post("/api/runs", json={"lesson": "script", "world_size": 4, "params": {"source": "print(1)"}})
    assert refused.status_code == 422 and "at most 2 ranks" in refused.text
