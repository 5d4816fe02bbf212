"""Two torchrun "nodes" on this machine (`--nnodes=2`, node ranks 0 and 1, c10d rendezvous), two ranks
each, feed one paralab run: node 0 started by `paralab trace -- torchrun …`, node 1 by
`python -m torch.distributed.run …` with PARALAB_SERVER (and the hook on PYTHONPATH, as
`paralab trace --env` prints them) from another directory. The run holds every rank's calls on one
clock, and its page in Chromium shows the ranks grouped by host with each host's clock skew, and the
script with the line of the current call."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid

import pytest
from playwright.sync_api import Page, expect

from app.cli_trace import job_environment
from tests import web
from tests.conftest import REPO, free_port

JOB = REPO / "tests" / "app" / "jobs" / "ring_job.py"
NODE_ARGS = ["--nnodes=2", "--nproc-per-node=2", "--rdzv-backend=c10d", "--max-restarts=0"]


def start_nodes(server_url: str, tmp_path) -> list[subprocess.Popen]:
    rendezvous = [f"--rdzv-endpoint=127.0.0.1:{free_port()}", f"--rdzv-id=paralab-test-{uuid.uuid4().hex[:8]}"]
    node0 = subprocess.Popen(
        [sys.executable, "-m", "app", "trace", "--server", server_url, "--", "torchrun", *NODE_ARGS,
         "--node-rank=0", *rendezvous, str(JOB)],
        cwd=REPO, env={**os.environ, "PARALAB_HOSTNAME": "node-a"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    node1 = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", *NODE_ARGS, "--node-rank=1", *rendezvous, str(JOB)],
        cwd=tmp_path, env={**os.environ, **job_environment(server_url, None), "PARALAB_HOSTNAME": "node-b"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return [node0, node1]


def ended_before_all_began(log: list[dict], skew: float) -> list[str]:
    """Collectives some rank left before another entered, beyond the clocks' skew: none, if aligned.
    The script's own dist.* calls (they block until done; DDP's are asynchronous)."""
    wrong = []
    called = [e for e in log if e["kind"] == "collective" and "torch_op" not in e]
    for key in {(e["op"], e["cseq"]) for e in called}:
        calls = [e for e in called if (e["op"], e["cseq"]) == key]
        last_begin = max(e["t"] for e in calls if e["phase"] == "begin")
        first_end = min(e["t"] for e in calls if e["phase"] == "end")
        if first_end < last_begin - 2 * skew:
            wrong.append(f"{key}: an end at {first_end} before a begin at {last_begin}")
    return wrong


@pytest.mark.slow
@pytest.mark.timeout(400)          # two torchrun agents and four ranks: a minute and more on two loaded cores
def test_two_torchrun_nodes_feed_one_run_whose_page_groups_the_ranks_by_host(page: Page, server, tmp_path):
    nodes = start_nodes(server.url, tmp_path)
    try:
        outputs = [node.communicate(timeout=300) for node in nodes]
    finally:
        for node in nodes:
            node.kill()
    for node, (out, err) in zip(nodes, outputs):
        assert node.returncode == 0, err
    assert "rank 0 of 4: all done" in outputs[0][0] and "rank 3 of 4: all done" in outputs[1][0]
    pages = [re.search(r"traced live at (\S+)", err).group(1) for _, err in outputs]   # each node's local rank 0 says
    assert pages[0] == pages[1]                                                           # one run for both nodes
    run_id = pages[0].rsplit("/", 1)[1]

    run = web.get(f"{server.url}/api/runs/{run_id}").json()
    assert (run["lesson"], run["world_size"], run["status"], run["backend"]) == ("torchrun", 4, "done", "gloo")
    log = [json.loads(line) for line in web.get(f"{server.url}/api/runs/{run_id}/events").text.splitlines()]
    hosts = {e["node"]: e for e in log if e["kind"] == "host"}
    assert {n: (h["host"], h["ranks"]) for n, h in hosts.items()} == {0: ("node-a", [0, 1]), 1: ("node-b", [2, 3])}
    for op in ("all_reduce", "all_gather", "barrier"):      # the script's own calls (DDP's carry a torch_op)
        ranks = sorted(e["rank"] for e in log if e["kind"] == "collective" and e["op"] == op and e["phase"] == "end"
                       and "torch_op" not in e)
        assert ranks == [0, 1, 2, 3], op
    assert sorted((e["rank"], e["peer"]) for e in log if e["kind"] == "p2p" and e["op"] == "send" and e["phase"] == "end") \
        == [(0, 1), (1, 2), (2, 3), (3, 0)]
    ddp = sorted(e["rank"] for e in log if e.get("torch_op") == "c10d.allreduce_" and e["phase"] == "end")
    assert ddp == [0, 1, 2, 3]                 # DDP's gradient all-reduce, made in C++: torch's dispatch level
    assert ended_before_all_began(log, max(h["skew_s"] for h in hosts.values())) == []

    page.goto(pages[0])
    expect(page.locator(".run-pill")).to_contain_text("done")
    panel = page.locator("#hosts-panel")
    expect(panel).to_be_visible()
    expect(panel.locator(".hosts-summary")).to_contain_text("4 ranks on 2 nodes")
    for node, name, ranks in ((0, "node-a", ["rank 0", "rank 1"]), (1, "node-b", ["rank 2", "rank 3"])):
        card = panel.locator(f'.host[data-node="{node}"]')
        expect(card.locator("h3")).to_have_text(f"node {node} · {name}")
        expect(card.locator(".rank-chip")).to_have_text(ranks)
        expect(card.locator(".host-clock")).to_contain_text("skew ±")
    expect(page.locator("#lanes .lane")).to_have_count(4)

    assert (run["params"]["filename"], run["params"]["source"]) == ("tests/app/jobs/ring_job.py", JOB.read_text())
    page.keyboard.press("Home")
    page.keyboard.press("]")                                  # the first call: the script's all_reduce
    all_reduce = JOB.read_text().splitlines().index("dist.all_reduce(x)") + 1
    source = page.locator("#source")
    expect(source.locator(".source-tab")).to_have_text(["jobs/ring_job.py"])
    expect(source.locator(".source-where")).to_contain_text(f"jobs/ring_job.py:{all_reduce}")
    expect(source.locator(".line.current")).to_have_attribute("data-line", str(all_reduce))
    expect(source.locator(".line.current")).to_contain_text("dist.all_reduce(x)")
