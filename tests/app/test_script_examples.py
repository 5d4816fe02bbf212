"""The playground's starting programs run on real ranks as they promise: the ring matches torch's
all-reduce, DDP and FSDP2 train, DTensor tensor parallelism matches one process, the deadlock hangs
and is reported at its line."""

from __future__ import annotations

import pytest

from tests.app.test_script_runs import printed, run_script
from workers.lessons.script import examples

EXAMPLES = {example["id"]: example for example in examples()}


def run_example(server, name: str, world_size: int, **extra):
    return run_script(server, EXAMPLES[name]["source"], world_size=world_size, filename=f"{name}.py", **extra)


@pytest.mark.parametrize("name, world_size, says", [
    ("ring", 3, "matches all_reduce: True"),
    ("tensor_parallel", 2, "matches one process: True"),
    ("ddp", 2, "step 2: loss"),
    ("fsdp2", 2, "step 1: loss"),
])
def test_each_starting_program_runs_to_the_end(server, name, world_size, says):
    run, log = run_example(server, name, world_size)
    assert run["status"] == "done", run["error"]
    outputs = printed(log)
    assert sorted(outputs) == list(range(world_size))
    assert all(says in text for text in outputs.values()), outputs


def line_of(name: str, text: str) -> int:
    return next(i for i, line in enumerate(EXAMPLES[name]["source"].splitlines(), 1) if text in line)


@pytest.mark.parametrize("name, op, at", [
    ("ddp", "all_reduce", "loss.backward()"),                 # DDP's reducer, from C++
    ("fsdp2", "reduce_scatter", "loss.backward()"),           # FSDP2's gradient reduce-scatter
    ("fsdp2", "all_gather", "loss = nn.functional"),          # … and its weights' all-gather
    ("tensor_parallel", "all_reduce", "y = mlp(x)"),          # RowwiseParallel's partial sums
])
def test_torchs_own_parallel_apis_are_traced_at_the_users_lines(server, name, op, at):
    """The collectives torch makes inside DDP, FSDP2 and DTensor (the dispatch-level tracer) name the
    line of the user's file that led to them."""
    run, log = run_example(server, name, 2)
    assert run["status"] == "done", run["error"]
    sites = {e["site"] for e in log if e["kind"] == "collective" and e["phase"] == "begin" and e["op"] == op}
    assert f"{name}.py:{line_of(name, at)}" in sites, sites
    assert all(site.startswith(f"{name}.py:") for site in sites), sites


def test_the_deadlock_program_hangs_at_its_line(server):
    run, _ = run_example(server, "deadlock", 3, hang_timeout_s=2)
    error = run["error"]
    assert (error["kind"], error["mismatch"], error["missing"]) == ("hang", "missing ranks", [2])
    assert error["ranks"]["0"]["world"]["last_begun"]["site"] == "deadlock.py:12"
