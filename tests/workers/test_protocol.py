"""workers/protocol.py: one constructor per event kind, what they put on the wire, the server's check
of a rank's event (naming the field), and the tracer's events built through them."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
import torch
import torch.distributed as dist

from tests.workers.helpers import REPO
from workers import comm, protocol
from workers.cost_model import wire_bytes
from workers.lab import Lab
from workers.protocol import BlobValues, decode_stream, encode, problem
from workers.tracer import Tracer

SAMPLES = {   # one well-formed event of each kind, through its constructor
    "run": dict(t=0.0, status="failed", error={"kind": "crash", "message": "rank 1 raised"}),
    "rank": dict(rank=0, t=1.0, status="finished"),
    "collective": dict(phase="end", rank=1, t=1.5, op="all_reduce", group="dp", ranks=[0, 1], cseq=3, shape=[4],
                       dtype="float32", bytes=16, wire_bytes=16, site="x.py:3", bucket=2, t_call=1.4, duration=0.1),
    "p2p": dict(phase="begin", rank=0, t=1.0, op="recv", group="world", ranks=[0, 1], peer=None, tag=0, shape=[2],
                dtype="float32", bytes=8, wire_bytes=0, site=None, chunk=1),
    "compute": dict(phase="begin", rank=0, t=1.0, name="F", stage=0, microbatch=2),
    "tensor": dict(rank=0, t=1.0, name="W1", place={"inside": "W", "full_shape": [4, 4], "offset": [0, 2]}),
    "gate": dict(phase="waiting", rank=0, t=1.0, call="collective", op="all_reduce", cseq=1),
    "check": dict(rank=0, t=1.0, name="Y", passed=False, detail="Y against the reference", max_abs_err="inf"),
    "metric": dict(rank=0, t=1.0, name="memory_gradients", value=4352.0, unit="bytes", formula="GΨ", expected=4352,
                   psi=1088),
    "log": dict(rank=0, t=1.0, level="error", message="ValueError: no", site="a.py:1"),
    "schedule": dict(rank=0, t=0.1, schedule="1F1B", grid=[], slow_stage=1, slow_factor=3),
    "topology": dict(rank=0, t=0.1, tp=2, pp=1, dp=1, groups={"tp": [[0, 1]]}, coordinates=[[0, 0, 0], [0, 0, 1]]),
    "host": dict(t=0.2, node=1, host="node-b", ranks=[2, 3], offset_s=-0.004, skew_s=0.0002),
}


def test_every_kind_has_a_constructor_and_a_sample():
    assert set(protocol.KINDS) == set(SAMPLES)


@pytest.mark.parametrize("kind", SAMPLES)
def test_each_constructor_makes_an_event_the_server_accepts(kind):
    event = protocol.event(kind, **SAMPLES[kind])
    assert event["kind"] == kind
    assert problem(json.loads(encode(event))) is None


def test_optional_fields_left_out_required_nulls_kept():
    event = protocol.event("p2p", **SAMPLES["p2p"])
    assert event["peer"] is None and event["site"] is None          # the page reads these as null
    assert "label" not in event and "tensors" not in event and "duration" not in event


@pytest.mark.parametrize("change, named", [
    ({"bytes": "16"}, "a collective event whose field `bytes` is wrong: Input should be a valid integer"),
    ({"bytes": 1.5}, "a collective event whose field `bytes` is wrong"),
    ({"op": "allreduce"}, "a collective event whose field `op` is wrong"),
    ({"ranks": [0, "1"]}, "a collective event whose field `ranks.1` is wrong"),
    ({"bucket": None, "colour": "red"}, "a collective event with the field `colour`, which a collective event does not have"),
    ({"wire_bytes": None}, "a collective event whose field `wire_bytes` is wrong"),
    ({"kind": "telemetry"}, "an event whose field `kind` is 'telemetry', not one of the kinds"),
    ({"seq": 4}, "an event with the field `seq`, which is the server's to assign"),
])
def test_a_malformed_event_is_named_by_its_field(change, named):
    event = {**protocol.event("collective", **SAMPLES["collective"]), **change}
    assert problem(event).startswith(named)


@pytest.mark.parametrize("change", [{}, {"bytes": "16"}, {"ranks": [0, "1"]}, {"colour": "red"}, {"kind": "telemetry"},
                                    {"seq": 4}, {"reduce_op": float("nan")}])
def test_an_event_is_judged_the_same_from_the_line_it_came_in(change):
    """The server checks an event as the line it read (not written again) when nothing in it changed."""
    event = {**protocol.event("collective", **SAMPLES["collective"]), **change}
    line = encode(event)
    assert problem(json.loads(line), line) == problem(event)


def test_a_missing_field_is_named():
    event = protocol.event("compute", **SAMPLES["compute"])
    del event["name"]
    assert problem(event) == "a compute event without the field `name`"


def test_a_metric_may_carry_other_numbers_but_named_ones_are_typed():
    metric = protocol.event("metric", **SAMPLES["metric"])
    assert problem({**metric, "per_layer": 12.5}) is None
    assert "field `psi`" in problem({**metric, "psi": 1088.5})


def test_a_constructor_refuses_a_field_its_kind_does_not_have():
    with pytest.raises(TypeError, match="colour"):
        protocol.event("compute", **SAMPLES["compute"], colour="red")
    with pytest.raises(ValueError, match="unknown event kind 'telemetry'"):
        protocol.event("telemetry", rank=0, t=0.0)


def test_the_protocol_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; from workers import protocol; "
            "protocol.problem({'kind': 'rank', 'rank': 0, 't': 0.0, 'status': 'finished'}); print('ok')")
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True).stdout == "ok\n"


def test_wire_bytes_per_op():
    assert [wire_bytes(op, 4, 400) for op in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                              "broadcast", "reduce", "send", "recv", "barrier")] == \
        [600, 300, 300, 300, 400, 400, 400, 0, 0]
    assert wire_bytes("all_reduce", 1, 400) == 0


# ---- the tracer's events --------------------------------------------------------------------------
def test_traced_events_validate_and_lesson_fields_come_through_comm(traced):
    _, emitted = traced
    x = torch.ones(8)
    comm.all_reduce(x, label="bucket 0: 8 gradient elements", fields={"bucket": 0})
    dist.barrier()
    calls = emitted.events
    assert [problem(e) for e in calls] == [None] * len(calls)
    assert [e.get("bucket") for e in calls] == [0, 0, None, None]   # the fields go with that call only
    assert [e["wire_bytes"] for e in calls] == [0, 0, 0, 0]         # one rank sends nothing


def test_lab_events_validate(traced):
    tracer, emitted = traced
    lab = Lab(tracer, 0, 1, torch.device("cpu"))
    lab.show("x", torch.ones(2, 2), inside="X", full_shape=(4, 2), offset=(0, 0))
    with lab.compute("F", stage=0, microbatch=1):
        pass
    lab.check("x", torch.ones(2), torch.ones(2), "x against ones")
    lab.metric("activations_in_flight", 1, "microbatches", bytes=64, formula="saved, not yet freed", other=2.5)
    lab.emit_event("schedule", schedule="GPipe", grid=[], slow_stage=0, slow_factor=3)
    events = emitted.events
    assert [e["kind"] for e in events] == ["tensor", "compute", "compute", "check", "metric", "schedule"]
    assert [problem(e) for e in events] == [None] * len(events)
    assert events[4]["other"] == 2.5 and events[4]["bytes"] == 64


def test_a_call_is_timed_without_the_tracers_own_work(world):
    """The end's `duration` is the original call alone: here each message the tracer sends takes
    50 ms (a slow socket), and none of that is in it, though it is between the begin's and the end's `t`."""
    emitted = []

    def slow_emit(message):
        time.sleep(0.05)
        emitted.append(message)

    t0 = time.monotonic()
    tracer = Tracer(slow_emit, 0, lambda: time.monotonic() - t0)
    tracer.install()
    try:
        dist.all_reduce(torch.ones(64))
    finally:
        tracer.uninstall()
    begin, end = [m for m in emitted if "kind" in m]
    assert end["t"] - begin["t"] >= 0.05                    # the begin event's own sending
    assert begin["t"] <= end["t_call"] <= end["t"]
    assert end["duration"] == pytest.approx(end["t"] - end["t_call"])
    assert end["duration"] < 0.05                           # no message's 50 ms in it (a busy core may stall the call itself)


def test_a_stream_of_lines_and_blob_frames_reads_back_message_by_message():
    """What a rank writes (events one a line, blobs as frames whose raw values may hold any byte,
    newlines included) reads back as the messages it sent; a frame cut short is refused by name."""
    values = BlobValues(b"\n\x00\xff\n" * 3)
    sent = [{"kind": "log", "message": "one"}, {"blob": "r0t0", "shape": [3], "dtype": "float32", "data": values},
            {"kind": "log", "message": "two"}]
    stream = b"".join(encode(m) for m in sent)
    assert decode_stream(stream) == [sent[0], {**sent[1], "nbytes": 12, "data": bytes(values)}, sent[2]]
    with pytest.raises(ValueError, match="blob 'r0t0' is cut short: 5 of its 12 bytes"):
        decode_stream(encode(sent[1])[:-7])
