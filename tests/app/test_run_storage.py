"""What one run may store is bounded, whatever its ranks send: a program looping a collective until its
time limit would otherwise write gigabytes of events and tensors (a hosted lab's disk, the server's
memory). Past `PARALAB_MAX_RUN_EVENTS` the run is stopped and fails saying why; full tensors past
`PARALAB_MAX_RUN_TENSOR_BYTES` are not kept, their previews are, and the run ends as it would have."""

from __future__ import annotations

import pytest

from tests import web
from tests.app.helpers import RunProcesses
from tests.app.test_script_runs import run_script
from tests.conftest import LiveServer

MAX_EVENTS = 400
MAX_TENSOR_BYTES = 256 * 1024          # room for 8 full tensors of 8,192 float32 values


@pytest.fixture(scope="module")
def bounded_server(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("paralab-bounded"), env={
        "PARALAB_MAX_RUN_EVENTS": str(MAX_EVENTS), "PARALAB_MAX_RUN_TENSOR_BYTES": str(MAX_TENSOR_BYTES)}).start()
    yield live
    live.stop()


def test_a_run_sending_events_past_the_limit_is_stopped_and_says_why(bounded_server):
    with RunProcesses(bounded_server) as seen:
        run, log = run_script(bounded_server, """
            import torch
            import torch.distributed as dist

            dist.init_process_group("gloo")
            x = torch.ones(4)
            while True:                     # until something stops it
                dist.all_reduce(x)
        """)
    assert run["status"] == "failed"
    assert run["error"]["kind"] == "limit" and run["error"]["code"] == "run.too_many_events"
    assert f"more than {MAX_EVENTS} events" in run["error"]["message"]
    assert run["error"]["rank"] in (0, 1)
    ranks_said = [e for e in log if e.get("rank") is not None and e["kind"] in ("collective", "rank", "tensor", "log")]
    assert len(ranks_said) <= MAX_EVENTS
    assert seen.supervisors() and seen.left_behind() == []
    assert bounded_server.run("tp_mlp", 2)["status"] == "done"          # the server goes on


def test_full_tensors_past_the_limit_are_not_kept_and_the_run_ends_as_it_would(bounded_server):
    run, log = run_script(bounded_server, """
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo")
        for step in range(12):
            x = torch.full((8192,), float(step))
            dist.all_reduce(x)
    """)
    assert run["status"] == "done", run["error"]
    ids = [t["id"] for e in log if e["kind"] == "collective" for t in e["tensors"]]
    assert len(ids) == 12 * 2 * 2 and all(ids)              # each call's tensor before and after, on 2 ranks
    fetched = [web.get(f"{bounded_server.url}/api/runs/{run['id']}/tensors/{i}").status_code for i in ids]
    assert fetched.count(200) == MAX_TENSOR_BYTES // (8192 * 4) and set(fetched) == {200, 404}
    stored = bounded_server.data_dir / "runs" / run["id"] / "tensors"
    assert sum(p.stat().st_size for p in stored.iterdir()) < MAX_TENSOR_BYTES + 8 * 1024   # values + headers
