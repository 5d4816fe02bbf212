"""Lesson `pp` on the live server, at 4 ranks: every schedule (paralab's own gpipe/1f1b and each one
torch ships) trains the stack to the single-process loss and gradients; each rank runs its compute in
exactly the order of the ideal grid `GET /api/runs/{id}/schedule` serves; activations in flight stay
within 1F1B's bound and reach m under GPipe; with a real compute delay the measured bubble is the
formula's; invalid combinations get a 422 naming the rule; the trace export pairs each send with its
recv; a straggler stage shows as longer spans.

Every schedule the server offers (`GET /api/lessons/pp`'s enum) is run; the per-schedule tests list
torch 2.13's, and a test fails when the installed torch ships others. Runs use 8 microbatches and a
1 ms delay unless a test says otherwise.
"""

from __future__ import annotations

import re
import statistics
import time

import httpx
import pytest

from tests import web
from tests.app.helpers import FINAL, events, run_count

P, M = 4, 8
SINGLE_STAGE = ("gpipe", "1f1b", "GPipe", "1F1B")     # one stage per rank; every other schedule gets v = 2
SCHEDULES = ("gpipe", "1f1b", "GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble",
             "ZBVZeroBubble", "DualPipeV")             # paralab's own, then those torch 2.13 ships
ACTION = re.compile(r"^(\d+)([FBIW])(\d+)$")
BUBBLE = (P - 1) / (M + P - 1)                       # 3/11
ROWS, HIDDEN = 2, 16                                 # each microbatch's rows; the layers' width (the default)


def stages_per_rank(schedule: str) -> int:
    return 1 if schedule in SINGLE_STAGE else 2


def schedule_names(server) -> list[str]:
    schema = web.get(f"{server.url}/api/lessons/pp").json()["params"]["properties"]["schedule"]
    return schema["enum"]


def run_all(server, specs: list[tuple[str, int, dict]], timeout: float = 280) -> list[dict]:
    """Start every run (the server runs two at once and queues the rest), then wait for all; each
    result is {"run": final state, "events": its event log}."""
    ids = [server.start_run(lesson, world, params)["id"] for lesson, world, params in specs]
    deadline = time.monotonic() + timeout
    results = []
    with httpx.Client(base_url=server.url, timeout=60) as client:
        for run_id, spec in zip(ids, specs):
            while (run := client.get(f"/api/runs/{run_id}").json())["status"] not in FINAL:
                assert time.monotonic() < deadline, f"run {spec} did not finish"
                time.sleep(0.05)
            results.append({"run": run, "events": events(server, run_id)})
    return results


def split(cell: str) -> list[tuple[int, str, int]]:
    """(stage, kind, microbatch) of "2F0", or of each part of "(0F3;3B1)OVERLAP_F_B"."""
    inner = cell[1:cell.index(")")].split(";") if cell.startswith("(") else [cell]
    assert cell.startswith("(") == cell.endswith(")OVERLAP_F_B"), cell
    out = []
    for piece in inner:
        match = ACTION.match(piece)
        assert match, f"not one of torch's action strings: {cell!r}"
        out.append((int(match[1]), match[2], int(match[3])))
    return out


def spans(got: list[dict], kind: str = "compute") -> list[dict]:
    """Begin events of `kind`, each with `duration` from its end (spans of one rank do not nest)."""
    open_, out = {}, []
    for e in got:
        if e["kind"] != kind:
            continue
        key = (e["rank"], e.get("name"), e.get("stage"), e.get("microbatch"))
        if e["phase"] == "begin":
            open_[key] = e
        else:
            begin = open_.pop(key)
            out.append({**begin, "duration": e["t"] - begin["t"]})
    assert not open_, f"spans never ended: {list(open_)}"
    return out


def metrics(run: dict, name: str) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for m in run["metrics"]:
        if m["name"] == name:
            out.setdefault(m["rank"], []).append(m)
    return out


def value(run: dict, name: str) -> float:
    [metric] = [m for m in run["metrics"] if m["name"] == name]
    return metric["value"]


@pytest.fixture(scope="module")
def names(server) -> list[str]:
    return schedule_names(server)


@pytest.fixture(scope="module")
def finished(server, names) -> dict[str, dict]:
    """Every schedule at 4 ranks, m = 8 (delay 1 ms); plus a straggler run and a tp_mlp run."""
    specs = {name: ("pp", P, {"schedule": name, "virtual_stages": stages_per_rank(name), "delay_ms": 1})
             for name in names}
    specs["slow"] = ("pp", P, {"schedule": "Interleaved1F1B", "virtual_stages": 2, "microbatches": 4,
                               "delay_ms": 30, "slow_stage": 5})
    specs["tp_mlp"] = ("tp_mlp", 2, {})
    results = run_all(server, list(specs.values()))
    out = dict(zip(specs, results))
    for key, result in out.items():
        result["schedule"] = web.get(f"{server.url}/api/runs/{result['run']['id']}/schedule")
    return out


def test_every_offered_schedule_is_run_and_tested(finished, names):
    assert names[:2] == ["gpipe", "1f1b"]
    assert set(names) <= set(finished), "a schedule the server offers was not run"
    assert set(names) == set(SCHEDULES), "the installed torch ships other schedules: add them to SCHEDULES"


@pytest.mark.parametrize("name", SCHEDULES)
def test_loss_and_every_gradient_match_one_process(finished, name):
    run = finished[name]["run"]
    assert run["status"] == "done", run["error"]
    v = stages_per_rank(name)
    checks = {c["name"]: c for c in run["checks"]}
    expected = {"loss"} | {f"stage {s} {p} gradient" for s in range(P * v) for p in ("0.weight", "0.bias")}
    assert set(checks) == expected and len(run["checks"]) == len(expected)
    failed = {n: (c["max_abs_err"], c["atol"], c["rtol"]) for n, c in checks.items() if not c["passed"]}
    assert not failed, failed
    placement = finished[name]["schedule"].json()["placement"]
    for s in range(P * v):                            # each stage's gradients come from the rank that holds it
        [holder] = [r for r, stages in enumerate(placement) if s in stages]
        assert checks[f"stage {s} 0.weight gradient"]["rank"] == holder
    [last] = [r for r, stages in enumerate(placement) if P * v - 1 in stages]
    assert checks["loss"]["rank"] == last


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_endpoint_serves_the_ideal_grid(finished, name):
    response = finished[name]["schedule"]
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"schedule", "grid", "notes", "placement", "bubble_fraction"}
    assert body["schedule"] == name
    grid = body["grid"]
    assert len(grid) == P and len({len(row) for row in grid}) == 1
    assert all(cell is None or isinstance(cell, str) for row in grid for cell in row)
    assert any(cell is None for row in grid for cell in row), "a 4-stage pipeline always has a bubble"
    v = stages_per_rank(name)
    assert sorted(s for stages in body["placement"] for s in stages) == list(range(P * v))
    for rank, row in enumerate(grid):                # every action on the rank that holds its stage
        for cell in filter(None, row):
            assert all(stage in body["placement"][rank] for stage, _, _ in split(cell)), (rank, cell)
    busy = sum(cell is not None for row in grid for cell in row)
    assert body["bubble_fraction"] == pytest.approx(1 - busy / (P * len(grid[0])))
    run = finished[name]["run"]
    assert value(run, "bubble_fraction_ideal") == pytest.approx(body["bubble_fraction"])
    assert 0 < value(run, "bubble_fraction") < 1
    [event] = [e for e in finished[name]["events"] if e["kind"] == "schedule"]
    assert event["rank"] == 0 and {k: event[k] for k in body} == body


@pytest.mark.parametrize("name", ["gpipe", "1f1b", "GPipe", "1F1B"])
def test_gpipe_and_1f1b_ideal_bubble_is_the_formula(finished, name):
    body = finished[name]["schedule"].json()
    assert body["bubble_fraction"] == pytest.approx(BUBBLE)
    assert len(body["grid"][0]) == 2 * (M + P - 1)
    [metric] = [m for m in finished[name]["run"]["metrics"] if m["name"] == "bubble_fraction_ideal"]
    assert metric["formula"] == f"(p − 1) / (m + p − 1) = {P - 1}/{M + P - 1}"      # what the page shows
    assert metric["expected"] == pytest.approx(BUBBLE)


def test_torchs_1f1b_grid_is_renumbered_with_a_note(finished):
    notes = finished["1F1B"]["schedule"].json()["notes"]
    assert len(notes) == 1 and "renumbered" in notes[0] and f"rank {P - 1}" in notes[0] and f"1…{M}" in notes[0]
    last = [cell for cell in finished["1F1B"]["schedule"].json()["grid"][-1] if cell and "F" in cell]
    assert last == [f"{P - 1}F{i}" for i in range(M)]
    for name in SCHEDULES:
        if name != "1F1B":
            assert finished[name]["schedule"].json()["notes"] == [], name


@pytest.mark.parametrize("name", SCHEDULES)
def test_each_rank_computes_in_the_grids_order(finished, name):
    got = finished[name]["events"]
    grid = finished[name]["schedule"].json()["grid"]
    computes = [e for e in got if e["kind"] == "compute"]
    assert {e["name"] for e in computes} <= {"F", "B", "I", "W"}
    assert all(isinstance(e["stage"], int) and isinstance(e["microbatch"], int) for e in computes)
    for rank in range(P):
        ran = [(e["stage"], e["name"], e["microbatch"]) for e in computes if e["rank"] == rank and e["phase"] == "begin"]
        planned = [part for cell in grid[rank] if cell is not None for part in split(cell)]
        assert ran == planned, f"rank {rank} ran {ran[:12]}…, the grid says {planned[:12]}…"


@pytest.mark.parametrize("name", SCHEDULES)
def test_activations_in_flight(finished, name):
    """1F1B holds at most p − rank microbatches' activations on rank `rank` (and reaches it with m ≥ p);
    GPipe holds all m; every schedule frees them all by the end."""
    run = finished[name]["run"]
    in_flight = metrics(run, "activations_in_flight")
    assert sorted(in_flight) == list(range(P))
    for rank, series in in_flight.items():
        values = [m["value"] for m in series]
        assert values[-1] == 0, f"rank {rank} ends holding {values[-1]}"
        assert all(abs(b - a) == 1 for a, b in zip([0] + values, values)), f"rank {rank}: {values}"
        assert all((m["value"] == 0) == (m["bytes"] == 0) and m["bytes"] >= 0 for m in series)
        peak = max(values)
        if name.lower() == "1f1b":
            assert peak == P - rank, f"rank {rank} held {peak}, 1F1B's bound is {P - rank}"
        elif name.lower() == "gpipe":
            assert peak == M, f"rank {rank} held {peak}"
        [reported] = metrics(run, "peak_activations_in_flight")[rank]
        assert reported["value"] == peak
        if name.lower() in ("1f1b", "gpipe"):                                  # the bound the page draws
            assert reported["bound"] == (P - rank if name.lower() == "1f1b" else M)
        [peak_bytes] = metrics(run, "peak_activation_bytes")[rank]
        assert peak_bytes["value"] == max(m["bytes"] for m in series)


@pytest.mark.parametrize("name", SCHEDULES)
def test_activation_bytes_are_the_saved_activations(finished, name):
    """Each microbatch a stage holds is its input and its tanh output (2 rows × 16 wide, float32):
    A = 256 B on every rank — the layer's weight, which autograd also keeps, is not counted. The peak
    is m·A under GPipe and min(p − r, m)·A under 1F1B, as the metric's `expected` says."""
    a = 2 * ROWS * HIDDEN * 4
    run = finished[name]["run"]
    for rank, series in metrics(run, "activations_in_flight").items():
        assert all(m["bytes"] == m["value"] * a for m in series), (rank, [(m["value"], m["bytes"]) for m in series])
    for rank in range(P):
        [peak] = metrics(run, "peak_activation_bytes")[rank]
        held = {"gpipe": M, "1f1b": min(P - rank, M)}.get(name.lower())
        if held is None:
            assert "expected" not in peak
        else:
            assert peak["value"] == peak["expected"] == held * a, (rank, peak)
        assert f"A = 2·b·h·4 = {a} B" in peak["formula"]


def test_gpipe_holds_more_activation_memory_than_1f1b(finished):
    for ours, theirs in (("gpipe", "1f1b"), ("GPipe", "1F1B")):
        gpipe = {m["rank"]: m["value"] for m in finished[ours]["run"]["metrics"] if m["name"] == "peak_activation_bytes"}
        one = {m["rank"]: m["value"] for m in finished[theirs]["run"]["metrics"] if m["name"] == "peak_activation_bytes"}
        assert all(one[r] < gpipe[r] for r in range(P)), (gpipe, one)


# ---- the trace export ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SCHEDULES)
def test_every_send_and_recv_names_its_peer(finished, name):
    """torch's pipelining names peers by their rank in the group (group_dst / group_src)."""
    placement = finished[name]["schedule"].json()["placement"]
    neighbours = {r: {q for q in range(P) for s in placement[r] for t in placement[q] if abs(s - t) == 1}
                  for r in range(P)}
    p2p = [e for e in finished[name]["events"] if e["kind"] == "p2p"]
    assert p2p
    for e in p2p:
        assert e["peer"] in neighbours[e["rank"]], e
    sent = sorted((e["rank"], e["peer"], e["bytes"]) for e in p2p if e["op"] == "send" and e["phase"] == "end")
    received = sorted((e["peer"], e["rank"], e["bytes"]) for e in p2p if e["op"] == "recv" and e["phase"] == "end")
    assert sent == received, "every message sent is received by the peer it names"


@pytest.mark.parametrize("name", ["1f1b", "Interleaved1F1B", "DualPipeV"])
def test_trace_has_compute_and_send_recv_lanes_and_a_flow_per_message(server, finished, name):
    response = web.get(f"{server.url}/api/runs/{finished[name]['run']['id']}/trace.json")
    assert response.status_code == 200
    trace = response.json()["traceEvents"]
    lanes = {(e["pid"], e["args"]["name"]): e["tid"] for e in trace if e["ph"] == "M" and e["name"] == "thread_name"}
    slices = [e for e in trace if e["ph"] == "X"]
    for rank in range(P):
        compute, p2p = lanes[(rank, "compute")], lanes[(rank, "send/recv")]
        assert compute != p2p
        mine = [s for s in slices if s["pid"] == rank]
        assert {s["tid"] for s in mine if s["cat"] == "compute"} == {compute}
        assert {s["tid"] for s in mine if s["cat"] == "p2p"} == {p2p}
        assert any(s["name"][0] == "F" for s in mine if s["cat"] == "compute")

    sends, recvs = {}, {}           # by where an arrow's ends are drawn: (rank, start of a send / end of a recv)
    for s in slices:
        if s["cat"] == "p2p":
            key = (s["pid"], s["ts"]) if s["name"].startswith("send") else (s["pid"], s["ts"] + s["dur"])
            (sends if s["name"].startswith("send") else recvs).setdefault(key, []).append(s)
    starts = {e["id"]: e for e in trace if e["ph"] == "s"}
    ends = {e["id"]: e for e in trace if e["ph"] == "f"}
    assert all(isinstance(i, int) for i in [*starts, *ends])
    assert len(starts) == len([e for e in trace if e["ph"] == "s"]), "a flow id is used twice"
    assert set(starts) == set(ends)
    assert len(starts) == sum(map(len, sends.values())) == sum(map(len, recvs.values())), \
        "every send and every recv is one end of one arrow"
    for flow_id, start in starts.items():
        end = ends[flow_id]
        send = next((s for s in sends.get((start["pid"], start["ts"]), []) if s["args"]["peer"] == end["pid"]), None)
        recv = next((r for r in recvs.get((end["pid"], end["ts"]), []) if r["args"]["peer"] == start["pid"]), None)
        assert send is not None, f"arrow {flow_id} does not start at a send from rank {start['pid']} to {end['pid']}"
        assert recv is not None, f"arrow {flow_id} does not end at a recv of rank {end['pid']} from {start['pid']}"
        assert (start["tid"], end["tid"]) == (send["tid"], recv["tid"])
        assert send["args"]["shape"] == recv["args"]["shape"] and send["args"].get("tag") == recv["args"].get("tag")
        assert start["ts"] <= end["ts"], "a message arrives before it was sent"


# ---- a straggler ----------------------------------------------------------------------------------

def test_a_slow_stage_takes_three_times_longer(finished):
    """Interleaved 1F1B, stage 5 slow: rank 1 holds stages 1 and 5; only stage 5's spans stretch."""
    run = finished["slow"]["run"]
    assert run["status"] == "done", run["error"]
    assert all(c["passed"] for c in run["checks"])
    forwards = [s for s in spans(finished["slow"]["events"]) if s["name"] == "F"]
    normal = statistics.median(s["duration"] for s in forwards if s["stage"] != 5)
    # a forward is its 30 ms delay plus a little compute and scheduling (more on a busy machine); the
    # slow stage's delay is three times as long, so it takes 2 × 30 ms more than the others. A loaded
    # machine only adds to a span, so the quickest span of each stage is the one to compare.
    assert 0.030 <= normal <= 0.060, normal
    quickest = {stage: min(s["duration"] for s in forwards if s["stage"] == stage) for stage in (1, 5)}
    others = min(s["duration"] for s in forwards if s["stage"] != 5)
    assert quickest[5] - others == pytest.approx(0.060, abs=0.015), (quickest, others)
    assert abs(quickest[1] - others) <= 0.015, (quickest, others)


# ---- the measured bubble --------------------------------------------------------------------------

def measured_bubble(server, schedule: str) -> float:
    run = server.run("pp", P, {"schedule": schedule, "microbatches": M, "delay_ms": 200})
    assert run["status"] == "done", run["error"]
    assert value(run, "bubble_fraction_ideal") == pytest.approx(BUBBLE)
    return value(run, "bubble_fraction")


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b", "1F1B"])
def test_measured_bubble_is_the_formulas(server, schedule):
    """(p − 1)/(m + p − 1) = 3/11 at p = 4, m = 8, with forwards of 200 ms and backwards of 400 ms.

    On 2 CPU cores each slot loses a few tens of ms (each hop's latency, sleeps that wake late), a
    fixed cost, so the longer the stages the closer the formula: at 100/200 ms a run landed 5–15 %
    above it, and on a machine busy with other work (browsers of other tests) 20–40 %. So a run outside 20 % is tried again, up to three runs; a wrong schedule or a wrong
    measurement misses every time. (torch's GPipe is left out: single runs measured up to 30 % above
    on a busy machine.)"""
    tries = []
    while len(tries) < 3:
        tries.append(measured_bubble(server, schedule))
        if abs(tries[-1] - BUBBLE) <= 0.2 * BUBBLE:
            break
    assert abs(tries[-1] - BUBBLE) <= 0.2 * BUBBLE, f"measured {tries}, formula {BUBBLE:.4f}"


# ---- invalid combinations ------------------------------------------------------------------------

@pytest.mark.parametrize("params, field, words", [
    ({"schedule": "1F1B", "microbatches": 3}, "microbatches", "at least as many microbatches"),
    ({"schedule": "1f1b", "microbatches": 2}, "microbatches", "at least as many microbatches"),
    ({"schedule": "Interleaved1F1B", "microbatches": 6, "virtual_stages": 2}, "microbatches", "divisible by 4"),
    ({"schedule": "ZBVZeroBubble", "virtual_stages": 3}, "virtual_stages", "exactly 2 stages per rank"),
    ({"schedule": "ZBVZeroBubble"}, "virtual_stages", "stages_per_rank"),
    ({"schedule": "DualPipeV", "virtual_stages": 1}, "virtual_stages", "stages_per_rank"),
    ({"schedule": "gpipe", "virtual_stages": 2}, "virtual_stages", "one stage per rank"),
    ({"schedule": "GPipe", "virtual_stages": 2}, "virtual_stages", "one stage per rank"),
    ({"schedule": "Zigzag"}, "schedule", "unknown schedule 'Zigzag'"),
    ({"slow_stage": 4}, "slow_stage", "slow_stage=4 is not a stage: stages are 0..3"),
    ({"schedule": "Interleaved1F1B", "virtual_stages": 2, "slow_stage": 8}, "slow_stage", "stages are 0..7"),
])
def test_invalid_combinations_get_a_422_naming_the_rule(server, params, field, words):
    before = run_count(server)
    response = web.post(f"{server.url}/api/runs", json={"lesson": "pp", "world_size": P, "params": params})
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert [d["loc"] for d in detail] == [["body", "params", field]], detail
    assert words in detail[0]["msg"], detail
    assert run_count(server) == before, "a refused run was started"


def test_schedule_is_404_for_other_lessons_and_unknown_runs(server, finished):
    assert finished["tp_mlp"]["run"]["status"] == "done"
    response = finished["tp_mlp"]["schedule"]
    assert response.status_code == 404 and "not a pipeline run" in response.json()["detail"]
    assert web.get(f"{server.url}/api/runs/no-such-run/schedule").status_code == 404
