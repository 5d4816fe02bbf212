"""The cluster's pieces that need no cluster: a placement is refused with its code where it means
nothing, ranks are laid out on nodes in order, each node's supervisor report makes one."""

from __future__ import annotations

import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from app.cluster import ClusterError, _ranks_in_order, cluster_address
from app.main import create_app
from app.run_ingest import _merged
from app.settings import Settings


def refusal(tmp_path, placement: str) -> dict:
    client = TestClient(create_app(Settings(DATA_DIR=tmp_path)), raise_server_exceptions=False)
    response = client.post("/api/runs", json={"lesson": "tp_mlp", "world_size": 2, "placement": placement})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "placement"]
    return error


def test_a_placement_without_a_cluster_is_refused_saying_so(tmp_path):
    error = refusal(tmp_path, "spread")
    assert error["type"] == "run.placement_needs_cluster"
    assert "needs a Ray cluster" in error["msg"] and "--cluster" in error["msg"]


def test_an_unknown_placement_names_the_ones_there_are(tmp_path):
    error = refusal(tmp_path, "diagonal")
    assert error["type"] == "run.placement_unknown"
    assert error["msg"] == "placement 'diagonal' is not one of pack, spread"


def test_consecutive_ranks_share_a_node_whatever_order_ray_gave_the_bundles():
    assert _ranks_in_order(["b", "a", "b", "a", "a", "b"]) == ["b", "b", "b", "a", "a", "a"]


def test_each_nodes_report_makes_one_with_every_rank():
    merged = _merged([
        {"supervisor": "exited", "exits": [{"rank": 2, "code": 0}, {"rank": 3, "code": 0}], "timed_out": False,
         "output": [{"rank": 3, "bytes": 1, "tail": "x"}], "node": "b"},
        {"supervisor": "exited", "exits": [{"rank": 0, "code": 0}, {"rank": 1, "code": -9}], "timed_out": True,
         "output": [], "node": "a"}])
    assert [e["rank"] for e in merged["exits"]] == [0, 1, 2, 3]
    assert merged["timed_out"] and merged["output"] == [{"rank": 3, "bytes": 1, "tail": "x"}]


def test_auto_reads_ray_address(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
    assert cluster_address("auto") == "10.0.0.5:6379"
    monkeypatch.delenv("RAY_ADDRESS")
    with pytest.raises(ClusterError, match="RAY_ADDRESS is not set"):
        cluster_address("auto")
    assert cluster_address("ray://head:10001") == "ray://head:10001"


def test_the_embedded_default_never_imports_ray(tmp_path):
    """Without --cluster, starting the app and refusing a placement imports no Ray."""
    import subprocess
    import sys

    program = ("import sys, warnings; warnings.simplefilter('ignore')\n"
               "from fastapi.testclient import TestClient\n"
               "from app.main import create_app\nfrom app.settings import Settings\n"
               f"client = TestClient(create_app(Settings(DATA_DIR={str(tmp_path)!r})))\n"
               "client.post('/api/runs', json={'lesson': 'tp_mlp', 'world_size': 2, 'placement': 'pack'})\n"
               "print('ray' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr[-2000:]
