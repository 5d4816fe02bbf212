"""Runs placed on a real two-node Ray cluster (issue #15), inside a namespace of its own: the cluster,
the paralab server (`--cluster`) and its client all run in `unshare -n` (tests/cluster/in_namespace.py),
so Ray, which listens on every interface, only ever has loopback. One cluster serves the module: the
client (tests/cluster/scenarios.py) runs every scenario once, and each test judges its part."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.in_namespace import unshare_permitted

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = ["tp_mlp", "three_d", "collectives", "too_big", "judge", "queue", "hang", "time_limit", "cancel", "step", "node_death"]     # node_death last: it takes a node away

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(900)]


def _unavailable() -> str | None:
    if importlib.util.find_spec("ray") is None:
        return "ray is not installed (pip install 'paralab[ray]')"
    return unshare_permitted()


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("cluster") / "seen.json"
    done = subprocess.run([sys.executable, "tests/cluster/in_namespace.py", "--", sys.executable,
                           "tests/cluster/scenarios.py", str(out), *SCENARIOS],
                          cwd=REPO, capture_output=True, text=True, timeout=840)
    assert done.returncode == 0 and out.exists(), f"status {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads(out.read_text())


def _scenario(seen: dict, name: str) -> dict:
    result = seen[name]
    assert "exception" not in result, result.get("exception")
    return result


def _on_both_nodes(result: dict, world_size: int) -> None:
    assert len(result["hosts"]) == 2, f"ranks on {result['hosts']}"
    assert sorted(r for ranks in result["hosts"].values() for r in ranks) == list(range(world_size))
    assert result["ranks_with_events"] == list(range(world_size))


def test_a_4_rank_tp_mlp_spread_over_two_nodes_passes_its_checks(seen):
    run = _scenario(seen, "tp_mlp")
    assert run["status"] == "done", run["error"]
    _on_both_nodes(run, 4)
    assert run["checks"] > 0 and run["checks_passed"] == run["checks"]


def test_an_8_rank_three_d_keeps_tensor_parallel_pairs_on_one_host(seen):
    run = _scenario(seen, "three_d")
    assert run["status"] == "done", run["error"]
    _on_both_nodes(run, 8)
    assert run["checks"] > 0 and run["checks_passed"] == run["checks"]
    for ranks in run["hosts"].values():          # tp=2: ranks 2k and 2k+1 are a TP pair, never split
        assert all(rank ^ 1 in ranks for rank in ranks), run["hosts"]


def test_the_collectives_sweep_fits_alpha_and_beta_per_link_class(seen):
    run = _scenario(seen, "collectives")
    assert run["status"] == "done", run["error"]
    _on_both_nodes(run, 4)
    host_of = {rank: host for host, ranks in run["hosts"].items() for rank in ranks}
    fits = {fit["link"]: fit for fit in run["link_fits"]}
    assert set(fits) == {"same host", "across hosts"}, run["link_fits"]
    same, across = fits["same host"]["ranks"], fits["across hosts"]["ranks"]
    assert host_of[same[0]] == host_of[same[1]] and host_of[across[0]] != host_of[across[1]]
    assert all(fit["value"] >= 0 and fit["beta"] >= 0 for fit in fits.values())
    # the page: a line per link class under the fit, and the Hosts panel with each node's ranks
    lines = run["page"]["links"]
    assert [line.split(" (")[0] for line in lines] == ["same host", "across hosts"], lines
    assert f"ranks 0 and {across[1]}" in lines[1] and "α = " in lines[1]
    assert run["page"]["hosts"] == run["hosts"]
    # the Ranks panel: each lane says its host, and each host's name heads its first lane
    assert run["page"]["lanes"] == run["hosts"]
    assert run["page"]["headed"] == list(run["hosts"])


def test_a_run_larger_than_the_whole_cluster_fails_at_once_and_the_queue_goes_on(seen):
    scenario = _scenario(seen, "too_big")
    run = scenario["too_big"]
    assert run["status"] == "failed" and run["error"]["kind"] == "launch", run["error"]
    assert "the cluster has 8 CPUs in all, and this run needs 12" in run["error"]["message"]
    assert run["seconds"] < 10
    assert scenario["next_run"]["status"] == "done", scenario["next_run"]["error"]


def test_a_submission_is_judged_on_a_cluster_node_in_its_sandbox(seen):
    verdict = _scenario(seen, "judge")
    assert verdict["status"] == "passed", verdict       # without bubblewrap on the node it would be refused
    nodes = set(_scenario(seen, "tp_mlp")["hosts"])
    assert any(verdict["note"] == f"judged on cluster node {node}" for node in nodes), (verdict, nodes)


def test_20_queued_runs_wait_for_the_cluster_and_all_end(seen):
    queue = _scenario(seen, "queue")
    assert queue["statuses"] == ["done"] * 20, queue["errors"]
    assert queue["largest_position"] > 1, "no run waited for the cluster's CPUs"


def test_a_users_runs_past_the_quota_are_refused_while_another_users_still_start(seen):
    queue = _scenario(seen, "queue")             # ada's 10 runs, her 11th, then bob's 10
    quota = queue["quota"]
    refused = queue["past_quota"]
    assert refused["in_flight"] == quota, refused        # all of ada's runs were still queued or running
    assert refused["status"] == 429, refused
    assert f"you have {quota} runs queued or running; the limit is {quota}" in refused["body"], refused
    assert queue["statuses"][quota:] == ["done"] * quota, queue["errors"]      # bob's runs started all the same


def test_a_hang_across_hosts_is_reported_and_its_ranks_stopped(seen):
    run = _scenario(seen, "hang")
    assert run["status"] == "failed" and run["error"]["kind"] == "hang", run["error"]
    assert run["error"]["message"].startswith("hung for 3 s: "), run["error"]["message"]
    assert len(run["hosts"]) == 2
    assert run["left"] == run["idle"], run


def test_the_time_limit_holds_across_hosts(seen):
    run = _scenario(seen, "time_limit")
    assert run["status"] == "failed" and run["error"]["kind"] == "timeout", run["error"]
    assert f"wall-clock limit of {run['limit_s']} s" in run["error"]["message"]
    assert run["seconds"] >= run["limit_s"]
    assert len(run["hosts"]) == 2
    assert run["left"] == run["idle"], run


def test_cancelling_a_run_across_hosts_stops_every_rank_on_both_nodes(seen):
    run = _scenario(seen, "cancel")
    assert run["status"] == "cancelled", run["error"]
    assert len(run["hosts"]) == 2
    assert run["during"] >= run["idle"] + 2 + 4, run        # a supervisor per node, four ranks
    assert run["left"] == run["idle"], run


def test_step_mode_steps_and_continues_ranks_on_both_nodes(seen):
    run = _scenario(seen, "step")
    assert len(run["hosts"]) == 2
    assert run["waits_after_one_step"] == 8, run        # one step: each of the 4 ranks on to its next gate
    assert run["status"] == "done" and run["checks"] == run["checks_passed"] > 0, run


def test_a_node_killed_mid_run_fails_that_run_naming_it_and_leaves_nothing(seen):
    run = _scenario(seen, "node_death")
    assert run["status"] == "failed" and run["error"]["kind"] == "node", run["error"]
    node = run["error"]["node"]
    assert node in run["hosts"] and node in run["error"]["message"]
    assert run["error"]["ranks"] == run["hosts"][node]
    *first, last = run["error"]["ranks"]                   # named in a sentence, not a Python list
    lost = f"ranks {', '.join(map(str, first))} and {last}" if first else f"rank {last}"
    assert f"with it {lost} of this run" in run["error"]["message"]
    assert len(run["hosts"]) == 2
    assert run["cluster"] == {"nodes": 2, "cpus": 8, "free_cpus": 8}      # /healthz, before the run
    # before the run: the server's launcher and one per node; after: the dead node's is gone, and every
    # supervisor and rank of the run too
    assert run["during"] > run["idle"] and run["left"] == run["idle"] - 1, run
    assert run["next_run"]["status"] == "done", run["next_run"]["error"]
