"""The tracer's dispatch level on a real one-rank gloo world: collectives no `dist.*` call makes
(a process group's own methods, functional collectives, DDP's reducer) are recorded once each, with
the op torch dispatched, the line in the caller's code, and an end when the call really ends; a
`dist.*` call is still one pair (its wrapper's), step mode's gate sees every call, `paused` hides them.

The two-rank programs (DDP, FSDP2, DTensor, tensor parallel, pipelining) are in test_corpus.py."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from tests.workers.helpers import here, on_the_wire
from workers.protocol import problem
from workers.tracer import Tracer

funcol = torch.ops._c10d_functional
REPO = Path(__file__).resolve().parents[2]


def phases(events):
    return [(e["phase"], e["op"]) for e in events]


def test_a_process_groups_own_method_is_recorded_once(traced):
    _, emitted = traced
    x = torch.arange(3.0)
    dist.group.WORLD.allreduce([x]).wait(); site = here()  # noqa: E702
    begin, end = emitted.events
    assert (begin["phase"], end["phase"]) == ("begin", "end")
    assert begin == {**begin, "op": "all_reduce", "torch_op": "c10d.allreduce_", "group": "world", "ranks": [0],
                     "reduce_op": "sum", "shape": [3], "bytes": 12, "site": site, "cseq": 1}
    assert end["torch_op"] == "c10d.allreduce_" and end["t"] >= begin["t"]
    assert [problem(e) for e in emitted.events] == [None, None]


def test_a_dist_call_stays_one_pair_without_a_torch_op(traced):
    _, emitted = traced
    dist.all_reduce(torch.ones(2))
    dist.barrier()
    assert phases(emitted.events) == [("begin", "all_reduce"), ("end", "all_reduce"),
                                      ("begin", "barrier"), ("end", "barrier")]
    assert all("torch_op" not in e for e in emitted.events)


def test_a_functional_collective_ends_at_its_wait(traced):
    _, emitted = traced
    group = dist.group.WORLD.group_name
    out = funcol.all_gather_into_tensor(torch.arange(4.0), 1, group); site = here()  # noqa: E702
    assert phases(emitted.events) == [("begin", "all_gather")], "no end before the wait"
    begin = emitted.events[0]
    assert (begin["torch_op"], begin["site"], begin["bytes"]) == ("_c10d_functional.all_gather_into_tensor", site, 16)
    funcol.wait_tensor(out)
    end = emitted.events[-1]
    assert (end["phase"], end["op"], end["cseq"]) == ("end", "all_gather", begin["cseq"])
    assert [v for row in end["tensors"][0]["preview"] for v in row] == [0, 1, 2, 3]


def test_ddps_gradient_all_reduce_is_recorded_at_the_backward_line(traced):
    tracer, emitted = traced
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    emitted.clear()
    model(torch.ones(3, 4)).sum().backward(); site = here()  # noqa: E702
    tracer.settle()         # the end is recorded in gloo's thread, which may still be at it
    grads = [e for e in emitted.events if e["op"] == "all_reduce"]
    assert [(e["phase"], e["torch_op"], e["site"]) for e in grads] == [
        ("begin", "c10d.allreduce_", site), ("end", "c10d.allreduce_", site)]
    assert grads[0]["bytes"] == 4 * (4 * 2 + 2)


def test_the_gate_stops_before_a_dispatched_collective(world):
    stops = []
    tracer = Tracer(lambda m: None, 0, time.monotonic, before_call=lambda call: stops.append(dict(call)))
    tracer.install()
    try:
        dist.group.WORLD.allreduce([torch.ones(1)]).wait(); site = here()  # noqa: E702
    finally:
        tracer.uninstall()
    assert [(s["kind"], s["op"], s["site"]) for s in stops] == [("collective", "all_reduce", site)]


def test_paused_hides_dispatched_collectives_too(traced):
    tracer, emitted = traced
    with tracer.paused():
        dist.group.WORLD.allreduce([torch.ones(1)]).wait()
        funcol.wait_tensor(funcol.all_reduce(torch.ones(1), "sum", dist.group.WORLD.group_name))
    assert emitted.events == []


def test_after_uninstall_nothing_is_recorded_and_install_records_again(world):
    events = []
    tracer = Tracer(lambda m: events.append(on_the_wire(m)), 0, time.monotonic)
    tracer.install()
    tracer.uninstall()
    dist.group.WORLD.allreduce([torch.ones(1)]).wait()
    funcol.wait_tensor(funcol.all_reduce(torch.ones(1), "sum", dist.group.WORLD.group_name))
    assert events == []
    tracer.install()                       # and installs again
    dist.group.WORLD.allreduce([torch.ones(1)]).wait()
    tracer.uninstall()
    assert [e["phase"] for e in events if "kind" in e] == ["begin", "end"]


def test_a_collective_from_another_thread_is_recorded(traced):
    _, emitted = traced
    worker = threading.Thread(target=lambda: dist.group.WORLD.allreduce([torch.ones(2)]).wait())
    worker.start()
    worker.join()
    assert phases(emitted.events) == [("begin", "all_reduce"), ("end", "all_reduce")]


def test_a_collective_under_inference_mode_is_recorded(traced):
    _, emitted = traced
    with torch.inference_mode():
        dist.group.WORLD.allreduce([torch.ones(2)]).wait()
    assert phases(emitted.events) == [("begin", "all_reduce"), ("end", "all_reduce")]


def test_a_call_never_waited_on_ends_at_uninstall(world):
    events = []
    tracer = Tracer(lambda m: events.append(m), 0, time.monotonic)
    tracer.install()
    funcol.all_reduce(torch.ones(1), "sum", dist.group.WORLD.group_name)
    tracer.uninstall()
    assert [e["phase"] for e in events if "kind" in e] == ["begin", "end"]


def test_a_second_tracer_cannot_take_the_kernels_of_the_first(traced):
    second = Tracer(lambda m: None, 0, time.monotonic)
    with pytest.raises(RuntimeError, match="another tracer's dispatch level is installed"):
        second.install()
    _, emitted = traced
    dist.group.WORLD.allreduce([torch.ones(1)]).wait()
    assert phases(emitted.events) == [("begin", "all_reduce"), ("end", "all_reduce")], "the first still records"


def test_the_dispatch_level_does_not_load_dtensor_for_a_program_that_never_uses_it():
    """`torch.distributed.tensor` costs a process near a second of CPU: a judged solution's ranks or a
    traced job's that never use DTensor do not pay it (its redistributions are recognised once loaded)."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, workers.dispatch_trace as d; d.register_kernels(); "
                             "print(sorted(m for m in sys.modules if m.startswith('torch.distributed.tensor')))"],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"
