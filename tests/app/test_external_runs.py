"""Jobs started outside the server (app/routes/external.py, app/external_runs.py), in process: what
the ranks of a torchrun job post, as workers/job_sender.py posts it, and what the run's log then
says. Real torchrun ranks: tests/app/test_torchrun_jobs.py and tests/browser/test_torchrun_job.py."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from workers.job_sender import MAX_SCRIPT_CHARS
from workers.protocol import Collective, Log


class NoLauncher:
    """This server starts no lesson runs: only external jobs come in."""
    ready, state, info = False, "down", {}

    async def start(self):
        pass

    async def wait(self):
        await asyncio.Event().wait()

    async def stop(self):
        pass


def make_client(tmp_path, **settings) -> TestClient:
    app = create_app(Settings(DATA_DIR=tmp_path, **settings))
    app.state.manager.launcher = NoLauncher()
    return TestClient(app)


@pytest.fixture
def client(tmp_path):
    with make_client(tmp_path) as client:
        yield client


def join(client, rank, job="job-a/0", world_size=4, node=0, host="node-a", member=None, script=None, **headers):
    return client.post("/api/external/join", json={"job": job, "world_size": world_size, "rank": rank, "node": node,
                                                   "host": host, "member": member or f"process-{rank}",
                                                   **({"script": script} if script else {})}, headers=headers)


def post(client, joined, rank, messages, node=0, host="node-a", offset=0.0, rtt=0.002, **headers):
    header = {"token": joined["token"], "rank": rank, "node": node, "host": host,
              "clock": {"offset": offset, "rtt": rtt}, "backend": "gloo"}
    body = "".join(json.dumps(m) + "\n" for m in [header, *messages])
    return client.post(f"/api/external/runs/{joined['run']}/events", content=body, headers=headers)


def goodbye(client, joined, rank, sent=0, dropped=0, stopped=None):
    return client.post(f"/api/external/runs/{joined['run']}/goodbye",
                       json={"token": joined["token"], "rank": rank, "sent": sent, "dropped": dropped, "stopped": stopped})


def events(client, run_id) -> list[dict]:
    return [json.loads(line) for line in client.get(f"/api/runs/{run_id}/events").text.splitlines()]


def barrier(rank: int, phase: str, t: float) -> dict:
    return Collective(phase=phase, rank=rank, t=t, op="barrier", group="world", ranks=[0, 1, 2, 3], cseq=1,
                      shape=[], dtype=None, bytes=0, wire_bytes=0, site="train.py:12").to_dict()


def test_the_ranks_of_one_job_share_one_run_and_another_job_gets_its_own(client):
    first = [join(client, rank).json() for rank in range(4)]
    assert len({j["run"] for j in first}) == 1
    assert first[0]["page"] == f"/jobs/{first[0]['run']}"
    other = join(client, 0, job="job-b/0").json()
    assert other["run"] != first[0]["run"]
    assert join(client, 1).json()["run"] == first[0]["run"]    # the same process again: its answer was lost
    again = join(client, 0, member="another-process").json()   # another rank 0 of job-a: torchrun reused the id
    assert again["run"] != first[0]["run"]
    run = client.get(f"/api/runs/{first[0]['run']}").json()
    assert (run["lesson"], run["world_size"], run["status"], run["params"]) == ("torchrun", 4, "running", {"job": "job-a/0"})


def test_the_first_script_a_rank_brings_is_the_runs_source(client):
    first = join(client, 1).json()                                        # rank 1 of node 0: no script
    join(client, 0, script={"path": "/home/ada/train.py", "text": "dist.barrier()\n"})
    join(client, 2, node=1, script={"path": "/scratch/ada/train.py", "text": "dist.barrier()  # node 1\n"})
    run = client.get(f"/api/runs/{first['run']}").json()
    assert run["params"] == {"job": "job-a/0", "source": "dist.barrier()\n", "filename": "/home/ada/train.py"}
    too_long = join(client, 3, script={"path": "/home/ada/train.py", "text": "x" * (MAX_SCRIPT_CHARS + 1)})
    assert too_long.status_code == 422 and "text" in too_long.text
    assert join(client, 3, script={"path": "", "text": ""}).status_code == 422


def test_times_are_put_on_the_server_clock_with_each_nodes_offset(client):
    """Node 1's clock is 100 s behind node 0's: the same moment on both lands on one time."""
    joined = [join(client, rank, node=rank // 2, host=f"node-{'ab'[rank // 2]}").json() for rank in range(4)]
    run_id = joined[0]["run"]
    for rank in range(4):
        node = rank // 2
        host_t = 1000.0 - 100 * node
        assert post(client, joined[rank], rank, [barrier(rank, "begin", host_t)], node=node,
                    host=f"node-{'ab'[node]}", offset=-990.0 + 100 * node, rtt=0.004 * (node + 1)).status_code == 200
    log = events(client, run_id)
    begins = [e for e in log if e["kind"] == "collective"]
    assert sorted(e["rank"] for e in begins) == [0, 1, 2, 3]
    assert max(e["t"] for e in begins) - min(e["t"] for e in begins) < 1e-5      # one moment, one time
    hosts = {e["node"]: e for e in log if e["kind"] == "host"}    # the latest of each node: all its ranks
    assert hosts[0]["host"] == "node-a" and hosts[0]["ranks"] == [0, 1]
    assert hosts[1]["host"] == "node-b" and hosts[1]["ranks"] == [2, 3]
    assert hosts[0]["offset_s"] == -990.0 and hosts[1]["offset_s"] == -890.0
    assert hosts[0]["skew_s"] == pytest.approx(0.002) and hosts[1]["skew_s"] == pytest.approx(0.004)
    assert client.get(f"/api/runs/{run_id}").json()["backend"] == "gloo"


def test_a_job_is_done_when_every_rank_has_said_goodbye_and_says_what_was_dropped(client):
    joined = [join(client, rank).json() for rank in range(4)]
    for rank in range(4):
        post(client, joined[rank], rank, [barrier(rank, "begin", 1.0), barrier(rank, "end", 1.1)])
    for rank in range(3):
        assert goodbye(client, joined[rank], rank, sent=2).json() == {"status": "running"}
    assert goodbye(client, joined[3], 3, sent=2, dropped=5).json() == {"status": "done"}
    log = events(client, joined[0]["run"])
    assert [e["rank"] for e in log if e["kind"] == "rank"] == [0, 1, 2, 3]
    assert [e["message"] for e in log if e["kind"] == "log"] == [
        "rank 3 dropped 5 of its 7 events (the server was out of reach or its queue was full)"]
    assert log[-1]["kind"] == "run" and log[-1]["status"] == "done"
    assert post(client, joined[0], 0, []).status_code == 410     # the run has ended: nothing more is taken


def test_a_rank_that_raised_fails_the_job_naming_its_line(client):
    joined = [join(client, rank, world_size=2).json() for rank in range(2)]
    error = Log(rank=1, t=2.0, level="error", message="ValueError: bad shape", site="/home/me/train.py:31",
                traceback="Traceback …").to_dict()
    post(client, joined[1], 1, [error])
    goodbye(client, joined[1], 1)
    goodbye(client, joined[0], 0, stopped="SIGTERM")
    run = client.get(f"/api/runs/{joined[0]['run']}").json()
    assert run["status"] == "failed"
    assert run["error"]["rank"] == 1 and run["error"]["site"] == "/home/me/train.py:31"
    assert run["error"]["message"] == "rank 1 raised ValueError: bad shape"


def test_a_job_whose_ranks_were_stopped_is_failed_saying_so(client):
    joined = [join(client, rank, world_size=2).json() for rank in range(2)]
    goodbye(client, joined[0], 0)
    goodbye(client, joined[1], 1, stopped="SIGTERM")
    run = client.get(f"/api/runs/{joined[0]['run']}").json()
    assert run["status"] == "failed" and run["error"]["kind"] == "stopped"
    assert run["error"]["message"] == "the launcher stopped rank 1 (SIGTERM) before the end"
    assert run["error"]["code"] == "job.stopped" and run["error"]["ranks"] == [1]


def test_a_rank_killed_without_a_goodbye_is_named_soon_after_the_job_is_torn_down(client, monkeypatch):
    """torchrun SIGTERMs the others when a rank dies; one killed by SIGKILL never says goodbye."""
    monkeypatch.setattr("app.external_runs.FAILING_GRACE_S", 0.5)
    joined = [join(client, rank, world_size=3).json() for rank in range(3)]
    goodbye(client, joined[0], 0, stopped="SIGTERM")
    goodbye(client, joined[2], 2, stopped="SIGTERM")
    url = f"/api/runs/{joined[0]['run']}"
    deadline = time.monotonic() + 10
    while client.get(url).json()["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    error = client.get(url).json()["error"]
    assert error["message"] == ("the launcher stopped ranks 0 and 2 (SIGTERM) before the end; the server never heard "
                                "from rank 1 again: killed without warning (SIGKILL, out of memory) or cut off from the server")
    assert (error["code"], error["vanished"], error["params"]["before"]["code"]) == ("job.vanished", [1], "job.stopped")


def test_a_web_page_cannot_feed_a_run(client):
    """A page the user visits could POST to 127.0.0.1: the browser adds its Origin (or Referer)."""
    refused = join(client, 0, origin="https://evil.example")
    assert refused.status_code == 403 and "web page" in refused.json()["detail"]   # the local-origin guard's or the route's words
    assert client.get("/api/runs").json() == []
    assert client.get("/api/external/clock", headers={"origin": "null"}).status_code == 403
    joined = join(client, 0).json()
    assert post(client, joined, 0, [barrier(0, "begin", 1.0)], referer="http://127.0.0.1:8000/").status_code == 403
    assert [e["kind"] for e in events(client, joined["run"])] == ["run"]


def test_bad_batches_are_refused_naming_what_is_wrong(client):
    joined = join(client, 0, world_size=2).json()
    assert join(client, 2, world_size=2).status_code == 422
    bad = client.post(f"/api/external/runs/{joined['run']}/events", content="not json\n")
    assert bad.status_code == 400 and "header line" in bad.json()["detail"]
    assert post(client, {**joined, "token": "wrong"}, 0, []).status_code == 410
    assert post(client, joined, 5, []).status_code == 422


def test_a_trace_token_is_needed_when_the_server_has_one(tmp_path):
    with make_client(tmp_path, TRACE_TOKEN="s3cret") as client:
        assert join(client, 0).status_code == 401
        assert join(client, 0, authorization="Bearer wrong").status_code == 401
        assert join(client, 0, authorization="Bearer s3cret").status_code == 200


def test_the_hosted_lab_takes_external_jobs_only_with_a_trace_token(tmp_path):
    with make_client(tmp_path / "a", AUTH="on", SECRET_KEY="k" * 32) as client:
        refused = join(client, 0)
        assert refused.status_code == 403 and "PARALAB_TRACE_TOKEN" in refused.json()["detail"]
    with make_client(tmp_path / "b", AUTH="on", SECRET_KEY="k" * 32, TRACE_TOKEN="s3cret") as client:
        joined = join(client, 0, authorization="Bearer s3cret")
        assert joined.status_code == 200
        assert client.get(f"/api/runs/{joined.json()['run']}").status_code == 401   # seen only signed in
