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


def test_the_deadlock_program_hangs_at_its_line(server):
    run, _ = run_example(server, "deadlock", 3, hang_timeout_s=2)
    error = run["error"]
    assert (error["kind"], error["mismatch"], error["missing"]) == ("hang", "missing ranks", [2])
    assert error["ranks"]["0"]["world"]["last_begun"]["site"] == "deadlock.py:12"
