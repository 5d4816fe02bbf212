"""The tracer on a real one-rank gloo world: every torch.distributed call, direct or through
`workers.comm`, becomes exactly one begin/end pair with its group, cseq, size, site and label."""

from __future__ import annotations

import inspect
import itertools
import json
import struct

import pytest
import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from tests.workers.helpers import here
from workers import comm
from workers.lab import Lab
from workers.protocol import COLLECTIVE_OPS, MAX_EVENT_BYTES, PREVIEW_SIDE, encode
from workers.tracer import SPECS, Tracer, _binder

COLLECTIVE_FIELDS = ("op", "group", "ranks", "cseq", "shape", "dtype", "bytes", "site")


def pairs(events: list[dict]) -> list[tuple[dict, dict]]:
    """(begin, end) of each call, asserting they alternate."""
    assert [e["phase"] for e in events] == ["begin", "end"] * (len(events) // 2), events
    return list(zip(events[::2], events[1::2]))


def values(preview: dict) -> list[float]:
    return [v for row in preview["preview"] for v in row]


def test_direct_all_reduce_is_one_begin_end_pair(traced):
    tracer, emitted = traced
    x = torch.arange(4, dtype=torch.float32)
    dist.all_reduce(x); site = here()  # noqa: E702
    [(begin, end)] = pairs(emitted.events)
    assert begin == {**begin, "kind": "collective", "op": "all_reduce", "group": "world", "ranks": [0],
                     "cseq": 1, "reduce_op": "sum", "shape": [4], "dtype": "float32", "bytes": 16,
                     "site": site, "rank": 0}
    for field in COLLECTIVE_FIELDS:
        assert end[field] == begin[field], field
    assert 0 <= begin["t"] <= end["t"]
    assert values(begin["tensors"][0]) == [0, 1, 2, 3]
    assert values(end["tensors"][0]) == [0, 1, 2, 3]


def test_reduce_op_is_named(traced):
    _, emitted = traced
    dist.all_reduce(torch.ones(2), op=dist.ReduceOp.MAX)
    dist.all_reduce(torch.ones(2), op=dist.ReduceOp.MIN)
    assert [e["reduce_op"] for e in emitted.events if e["phase"] == "begin"] == ["max", "min"]


def test_groups_are_named_and_each_counts_its_own_cseq(traced):
    tracer, emitted = traced
    tp = dist.new_group([0])
    tracer.name_group(tp, "tp")
    other = dist.new_group([0])                     # never named: gets a generic name
    x = torch.ones(2)
    dist.all_reduce(x)
    dist.all_reduce(x, group=tp)
    dist.all_reduce(x)
    dist.barrier(group=tp)
    dist.all_reduce(x, group=other)
    dist.all_reduce(x, group=None)
    begins = [e for e in emitted.events if e["phase"] == "begin"]
    assert [(e["group"], e["cseq"]) for e in begins] == [
        ("world", 1), ("tp", 1), ("world", 2), ("tp", 2), (begins[4]["group"], 1), ("world", 3)]
    assert begins[4]["group"] not in ("world", "tp")
    ends = [e for e in emitted.events if e["phase"] == "end"]
    assert [(e["group"], e["cseq"]) for e in ends] == [(e["group"], e["cseq"]) for e in begins]


def test_lab_group_names_the_world(traced):
    tracer, emitted = traced
    lab = Lab(tracer, 0, 1, torch.device("cpu"))
    tp = lab.group("tp")
    assert lab.group("tp") is tp
    comm.all_reduce(torch.ones(2), group=tp)
    assert {e["group"] for e in emitted.events} == {"tp"}


def test_comm_labels_the_next_call_only(traced):
    _, emitted = traced
    x = torch.ones(3)
    comm.all_reduce(x, label="g forward: sum the partial outputs"); site = here()  # noqa: E702
    dist.all_reduce(x)
    (b1, e1), (b2, e2) = pairs(emitted.events)
    assert b1["label"] == e1["label"] == "g forward: sum the partial outputs"
    assert b1["site"] == site                      # comm.py is skipped: the site is the caller's line
    assert "label" not in b2 and "label" not in e2


def test_comm_all_gather_and_reduce_scatter(traced):
    _, emitted = traced
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    out = comm.all_gather(x, label="enter: all-gather"); site = here()  # noqa: E702
    assert torch.equal(out, x)
    back = comm.reduce_scatter(out, label="leave: reduce-scatter")
    assert torch.equal(back, x)
    (ag, ag_end), (rs, rs_end) = pairs(emitted.events)
    assert (ag["op"], ag["label"], ag["site"], ag["shape"], ag["bytes"]) == ("all_gather", "enter: all-gather", site, [2, 3], 24)
    assert (rs["op"], rs["label"], rs["reduce_op"], rs["bytes"]) == ("reduce_scatter", "leave: reduce-scatter", "sum", 24)
    assert values(ag_end["tensors"][0]) == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("call, op", [
    (lambda x: dist.all_gather_into_tensor(torch.empty(4), x), "all_gather"),
    (lambda x: dist.reduce_scatter_tensor(torch.empty(4), x), "reduce_scatter"),
    (lambda x: c10d.all_gather_into_tensor(torch.empty(4), x), "all_gather"),
    (lambda x: dist._all_gather_base(torch.empty(4), x), "all_gather"),
    (lambda x: dist._reduce_scatter_base(torch.empty(4), x), "reduce_scatter"),
], ids=["all_gather_into_tensor", "reduce_scatter_tensor", "c10d.all_gather_into_tensor",
        "_all_gather_base", "_reduce_scatter_base"])
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_deprecated_alias_is_one_pair_at_the_callers_line(traced, call, op):
    """The alias calls its replacement, itself traced: still one user-visible call."""
    _, emitted = traced
    call(torch.arange(4, dtype=torch.float32))
    [(begin, end)] = pairs(emitted.events)
    assert begin["op"] == end["op"] == op
    assert begin["cseq"] == 1
    assert begin["site"] == f"tests/workers/test_tracer.py:{call.__code__.co_firstlineno}"   # the lambda's line


@pytest.mark.parametrize("call, op, root", [
    (lambda x: dist.broadcast(x, src=0), "broadcast", 0),
    (lambda x: dist.reduce(x, dst=0), "reduce", 0),
    (lambda x: dist.all_gather([torch.empty(4)], x), "all_gather", None),
    (lambda x: dist.reduce_scatter(torch.empty(4), [x]), "reduce_scatter", None),
    (lambda x: dist.gather(x, [torch.empty(4)], dst=0), "gather", 0),
    (lambda x: dist.scatter(torch.empty(4), [x], src=0), "scatter", 0),
    (lambda x: dist.all_to_all([torch.empty(4)], [x]), "all_to_all", None),
    (lambda x: dist.all_to_all_single(torch.empty(4), x), "all_to_all", None),
    (lambda x: dist.barrier(), "barrier", None),
])
def test_every_direct_collective_is_traced(traced, call, op, root):
    _, emitted = traced
    call(torch.arange(4, dtype=torch.float32))
    [(begin, end)] = pairs(emitted.events)
    assert op in COLLECTIVE_OPS
    assert begin["op"] == op and begin["group"] == "world" and begin["ranks"] == [0]
    assert begin.get("root") == root
    if op != "barrier":
        assert (begin["shape"], begin["dtype"], begin["bytes"]) == ([4], "float32", 16)


def test_a_failing_call_still_ends_its_span(traced):
    _, emitted = traced
    with pytest.raises(RuntimeError, match="invalid root rank"):
        dist.broadcast(torch.ones(2), src=5)
    [(begin, end)] = pairs(emitted.events)
    assert "invalid root rank" in end["error"]
    dist.all_reduce(torch.ones(2))                 # the tracer is not stuck "inside" a call
    assert len(emitted.events) == 4


def test_async_work_ends_when_waited_on_once(traced):
    _, emitted = traced
    work = dist.all_reduce(torch.ones(2), async_op=True)
    assert [e["phase"] for e in emitted.events] == ["begin"]
    work.wait()
    work.wait()
    assert work.is_completed()
    assert [e["phase"] for e in emitted.events] == ["begin", "end"]


class _AllReduceBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        ctx.site = here(); return comm.all_reduce(grad.clone(), label="f backward")  # noqa: E702


def test_site_of_a_call_made_inside_autograd_backward(traced):
    _, emitted = traced
    x = torch.ones(3, requires_grad=True)
    y = _AllReduceBackward.apply(x)
    y.sum().backward()
    [(begin, _)] = pairs(emitted.events)
    assert begin["label"] == "f backward"
    assert begin["site"] == y.grad_fn.site


def test_p2p_op_is_still_accepted(traced):
    x = torch.ones(2)
    for op in (dist.isend, dist.irecv, c10d.isend, c10d.irecv):
        assert dist.P2POp(op, x, 0).op is op


def test_uninstall_restores_torch_distributed(world):
    originals = {name: getattr(dist, name) for name in ("all_reduce", "isend", "batch_isend_irecv")}
    emitted = []
    tracer = Tracer(emitted.append, 0, lambda: 0.0)
    tracer.install()
    assert dist.all_reduce is not originals["all_reduce"]
    assert c10d.isend is dist.isend                   # P2POp compares against c10d's name
    tracer.uninstall()
    for name, original in originals.items():
        assert getattr(dist, name) is original
        assert getattr(c10d, name) is original
    dist.all_reduce(torch.ones(2))
    assert emitted == []


# ---- the event-size bound --------------------------------------------------------------------------

def test_all_gather_of_a_million_values_stays_under_16_kib(traced):
    _, emitted = traced
    big = torch.randn(1000, 1000)
    out = [torch.empty(1000, 1000)]
    dist.all_gather(out, big)
    [(begin, end)] = pairs(emitted.events)
    for event in (begin, end):
        assert len(encode(event)) < MAX_EVENT_BYTES
        [p] = event["tensors"]
        assert p["shape"] == [1000, 1000]
        assert len(p["preview"]) <= PREVIEW_SIDE and all(len(row) <= PREVIEW_SIDE for row in p["preview"])
        assert p["exact"] is False
        assert p["id"] is None                      # too large to keep whole
        assert p["stats"]["abs_max"] == pytest.approx(float(big.abs().max()))
    assert begin["bytes"] == 4_000_000


@pytest.mark.parametrize("count", [2, 8, 64, 500])
def test_many_tensors_in_one_event_stay_under_16_kib(traced, count):
    tracer, _ = traced
    tensors = [torch.randn(100, 100) for _ in range(count)]
    event = {"kind": "collective", "phase": "end", "rank": 0, "t": 1.0, "op": "all_gather", "group": "world"}
    shown = tracer.previews(tensors, [f"tensor_list[{i}]" for i in range(count)], event)
    assert len(encode({"seq": 99_999_999, **event, "tensors": shown})) < MAX_EVENT_BYTES   # numbered by the server
    if count <= 64:                                 # each still named, with its statistics
        assert [p["name"] for p in shown] == [f"tensor_list[{i}]" for i in range(count)]
        assert all(p["stats"]["abs_max"] > 0 for p in shown)


@pytest.mark.parametrize("value", [-89_999_999.0, -12_345_678.0, -1.2345e-30, 1.0 / 3])
def test_a_whole_grid_of_the_longest_numbers_is_kept_and_fits(traced, value):
    """The tracer bounds an event's size without encoding it (11 characters a value at most below
    9e7): a 32x32 grid of the longest numbers is shown whole, and the event still fits."""
    tracer, _ = traced
    t = torch.full((64, 64), value, dtype=torch.float64)
    event = {"kind": "collective", "phase": "begin", "rank": 0, "t": 1.0, "op": "all_reduce", "group": "world"}
    [shown] = tracer.previews([t], ["tensor"], event)
    assert len(shown["preview"]) == PREVIEW_SIDE and len(shown["preview"][0]) == PREVIEW_SIDE
    assert len(encode({"seq": 99_999_999, **event, "tensors": [shown]})) < MAX_EVENT_BYTES


def test_lab_events_of_large_tensors_stay_under_16_kib(traced):
    tracer, emitted = traced
    lab = Lab(tracer, 0, 1, torch.device("cpu"))
    big = torch.randn(1000, 1000)
    lab.show("activations", big, inside="A", full_shape=(1000, 1000), offset=(0, 0))
    assert lab.check("output", big, big.clone(), "the same tensor twice")
    with lab.compute("GELU"):
        pass
    lab.metric("bytes", 123, "bytes")
    events = emitted.events
    assert [e["kind"] for e in events] == ["tensor", "check", "compute", "compute", "metric"]
    assert all(len(encode(e)) < MAX_EVENT_BYTES for e in events)
    assert events[0]["place"] == {"inside": "A", "full_shape": [1000, 1000], "offset": [0, 0]}
    assert events[1]["passed"] is True and events[1]["max_abs_err"] == 0.0
    assert [p["name"] for p in events[1]["tensors"]] == ["output (this rank)", "output (reference)"]


def test_lab_check_that_fails_says_how_far_off(traced):
    tracer, emitted = traced
    lab = Lab(tracer, 0, 1, torch.device("cpu"))
    assert not lab.check("Y", torch.ones(3), torch.zeros(3), "ones against zeros")
    assert not lab.check("Y", torch.ones(3), torch.zeros(4), "wrong shape")
    first, second = emitted.events
    assert (first["passed"], first["max_abs_err"]) == (False, 1.0)
    assert second["passed"] is False and "shape [3] vs reference [4]" in second["detail"]


def test_every_preview_id_names_a_blob_with_the_full_values(traced):
    _, emitted = traced
    x = torch.randn(40, 40)                          # more than 32x32: the preview is not exact
    dist.all_reduce(x)
    ids = [p["id"] for e in emitted.events for p in e["tensors"]]
    assert len(ids) == 2 and len(set(ids)) == 2
    for tensor_id in ids:
        blob = emitted.blobs[tensor_id]
        data = blob["data"]
        assert blob["shape"] == [40, 40]
        assert list(struct.unpack(f"<{40 * 40}f", data)) == pytest.approx(x.flatten().tolist())


def test_a_diverged_check_is_still_valid_json(traced):
    """NaN or infinity in a compared tensor: the check fails, and its event still parses in a browser."""
    tracer, emitted = traced
    lab = Lab(tracer, 0, 1, torch.device("cpu"))
    assert not lab.check("Y", torch.tensor([1.0, float("nan")]), torch.zeros(2), "diverged")
    assert not lab.check("Y", torch.tensor([float("inf")]), torch.zeros(1), "overflowed")
    for event in emitted.events:
        json.dumps(event, allow_nan=False)
    assert [e["max_abs_err"] for e in emitted.events] == ["nan", "inf"]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_a_call_is_read_as_inspect_binds_it(name):
    """The wrappers read a call's arguments without `inspect.bind` (a tenth of its cost): the same
    names and values in the same order for every way of calling, and the same error for a wrong call."""
    signature = inspect.signature(getattr(c10d, name))
    arguments, names = _binder(signature), list(signature.parameters)

    def bound(args, kwargs):
        try:
            b = signature.bind(*args, **kwargs)
        except TypeError as exc:
            return str(exc)
        b.apply_defaults()
        return list(b.arguments.items())

    def read(args, kwargs):
        try:
            return list(arguments(args, kwargs).items())
        except TypeError as exc:
            return str(exc)
    for given in range(len(names) + 2):
        for keywords in [(), ("bogus",), *itertools.combinations(names, 1), *itertools.combinations(names, 2)]:
            args, kwargs = tuple(range(given)), {k: k for k in keywords}
            assert read(args, kwargs) == bound(args, kwargs), (args, kwargs)
