"""Lessons on real gloo ranks through the live server: their checks, the mistakes they teach, the
events a run produces, its tensors and its trace."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests import web
from tests.app.helpers import RunProcesses, events
from workers.protocol import COLLECTIVE_OPS, MAX_EVENT_BYTES

CHECKS = {
    "tp_mlp": {"output Y", "W1 shard gradient", "W2 shard gradient", "input gradient dX"},
    "sp_mlp": {"output Y shard", "input gradient dX shard", "W1 shard gradient", "W2 shard gradient",
               "LayerNorm weight gradient"},
}
COLLECTIVE_FIELDS = ("op", "group", "ranks", "cseq", "shape", "dtype", "bytes", "site")


@pytest.fixture(scope="module")
def lesson_runs(server) -> dict[tuple[str, int], dict]:
    """tp_mlp and sp_mlp at 1, 2 and 4 ranks, with default parameters, each watched for its processes."""
    runs = {}
    for lesson in ("tp_mlp", "sp_mlp"):
        for world_size in (1, 2, 4):
            with RunProcesses(server) as procs:
                run = server.run(lesson, world_size)
            runs[lesson, world_size] = {"run": run, "events": events(server, run["id"]), "procs": procs}
    return runs


@pytest.mark.parametrize("world_size", [1, 2, 4])
@pytest.mark.parametrize("lesson", ["tp_mlp", "sp_mlp"])
def test_every_check_passes_on_every_rank(lesson_runs, lesson, world_size):
    run = lesson_runs[lesson, world_size]["run"]
    assert run["status"] == "done", run["error"]
    assert run["error"] is None
    by_rank = Counter(c["rank"] for c in run["checks"])
    assert by_rank == {r: len(CHECKS[lesson]) for r in range(world_size)}
    for check in run["checks"]:
        assert check["name"] in CHECKS[lesson]
        assert check["passed"] is True, check
        assert check["max_abs_err"] <= check["atol"]
        assert check["detail"]


@pytest.mark.parametrize("world_size", [1, 2, 4])
@pytest.mark.parametrize("lesson", ["tp_mlp", "sp_mlp"])
def test_no_process_is_left_behind(lesson_runs, lesson, world_size):
    procs = lesson_runs[lesson, world_size]["procs"]
    assert len(procs.seen) >= world_size + 1          # the watch saw the supervisor and every rank
    assert procs.left_behind() == []


@pytest.mark.parametrize("world_size", [1, 2, 4])
@pytest.mark.parametrize("lesson", ["tp_mlp", "sp_mlp"])
def test_events_of_a_run(lesson_runs, server, lesson, world_size):
    got = lesson_runs[lesson, world_size]["events"]
    run = lesson_runs[lesson, world_size]["run"]

    assert [e["seq"] for e in got] == list(range(1, len(got) + 1))
    assert run["events"] == len(got)
    assert [(e["kind"], e["status"]) for e in got[:2]] == [("run", "queued"), ("run", "running")]
    assert (got[-1]["kind"], got[-1]["status"]) == ("run", "done")
    assert {e["rank"] for e in got} == {None, *range(world_size)}
    for event in got:
        assert len(json.dumps(event, separators=(",", ":"))) < MAX_EVENT_BYTES

    sources = {s["path"] for s in web.get(f"{server.url}/api/lessons/{lesson}").json()["sources"]}
    for rank in range(world_size):
        open_spans: list[dict] = []
        for event in (e for e in got if e["rank"] == rank and e.get("phase")):
            if event["phase"] == "begin":
                open_spans.append(event)
                continue
            begin = open_spans.pop()                  # spans nest: an end closes the latest begin
            assert (begin["kind"], begin.get("op"), begin.get("name")) == \
                (event["kind"], event.get("op"), event.get("name"))
            assert begin["t"] <= event["t"]
        assert open_spans == []

    collectives = [e for e in got if e["kind"] == "collective"]
    assert collectives
    for event in collectives:
        for field in COLLECTIVE_FIELDS:
            assert event.get(field) is not None, (field, event)
        assert event["op"] in COLLECTIVE_OPS
        assert event["group"] == "tp" and event["ranks"] == list(range(world_size))
        assert event["label"]
        assert event["site"].rsplit(":", 1)[0] in sources     # the page can show the line
    for rank in range(world_size):                            # cseq counts 1, 2, … on each rank
        cseqs = [e["cseq"] for e in collectives if e["rank"] == rank and e["phase"] == "begin"]
        assert cseqs == list(range(1, len(cseqs) + 1))

    [metric] = [e for e in got if e["kind"] == "metric" and e["name"] == "block_comm_bytes_expected"]
    assert metric["rank"] == 0 and metric["unit"] == "bytes"
    sent = sum(e["bytes"] for e in collectives if e["rank"] == 0 and e["phase"] == "begin")
    assert metric["value"] == sent


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_each_rank_says_when_it_finished_its_program(lesson_runs, world_size):
    log = lesson_runs["sp_mlp", world_size]["events"]
    for rank in range(world_size):
        mine = [e for e in log if e["rank"] == rank]
        finished = [i for i, e in enumerate(mine) if e["kind"] == "rank"]
        assert [mine[i]["status"] for i in finished] == ["finished"]
        assert all(e["kind"] not in ("collective", "p2p", "check") for e in mine[finished[0] + 1:])
    assert log[-1]["kind"] == "run"                   # and then the run ends


def test_tp_mlp_all_reduces_forward_and_backward(lesson_runs):
    got = lesson_runs["tp_mlp", 2]["events"]
    begins = [e for e in got if e["kind"] == "collective" and e["phase"] == "begin" and e["rank"] == 0]
    assert [(e["op"], e["label"], e["shape"], e["bytes"]) for e in begins] == [
        ("all_reduce", "g forward: sum the partial outputs", [8, 16], 8 * 16 * 4),
        ("all_reduce", "f backward: sum the input gradients", [8, 16], 8 * 16 * 4)]


def test_sp_mlp_gathers_and_scatters_the_sequence(lesson_runs):
    got = lesson_runs["sp_mlp", 4]["events"]
    begins = [e for e in got if e["kind"] == "collective" and e["phase"] == "begin" and e["rank"] == 3]
    assert [(e["op"], e["shape"]) for e in begins] == [
        ("all_gather", [2, 16]), ("reduce_scatter", [8, 16]),      # forward: enter, leave
        ("all_gather", [2, 16]), ("reduce_scatter", [8, 16]),      # backward: leave, enter
        ("all_reduce", [16])]                                      # LayerNorm's weight gradient


@pytest.mark.parametrize("lesson, mistake, world_size, failing", [
    ("tp_mlp", "swap_f_g", 1, set()),
    ("tp_mlp", "swap_f_g", 2, CHECKS["tp_mlp"]),
    ("tp_mlp", "swap_f_g", 4, CHECKS["tp_mlp"]),
    ("sp_mlp", "forget_ln_allreduce", 1, set()),
    ("sp_mlp", "forget_ln_allreduce", 2, {"LayerNorm weight gradient"}),
    ("sp_mlp", "forget_ln_allreduce", 4, {"LayerNorm weight gradient"}),
])
def test_each_mistake_fails_its_checks(server, lesson, mistake, world_size, failing):
    run = server.run(lesson, world_size, {"mistake": mistake})
    assert run["status"] == "done"                             # wrong numbers are not a crash
    for rank in range(world_size):
        mine = {c["name"]: c for c in run["checks"] if c["rank"] == rank}
        assert mine.keys() == CHECKS[lesson]
        assert {name for name, c in mine.items() if not c["passed"]} == failing, rank
        for name in failing:
            assert mine[name]["max_abs_err"] > mine[name]["atol"]


# ---- tensors and trace ------------------------------------------------------------------------

def test_tensor_by_preview_id_matches_an_exact_preview(server, lesson_runs):
    run_id = lesson_runs["tp_mlp", 2]["run"]["id"]
    exact = [p for e in lesson_runs["tp_mlp", 2]["events"] if e["kind"] == "tensor"
             for p in [e["tensor"]] if p["exact"] and p["id"]]
    assert exact
    for preview in exact:
        response = web.get(f"{server.url}/api/runs/{run_id}/tensors/{preview['id']}")
        assert response.status_code == 200
        full = response.json()
        assert (full["id"], full["shape"], full["dtype"]) == (preview["id"], preview["shape"], preview["dtype"])
        shown = [v for row in preview["preview"] for v in row]
        assert full["values"] == pytest.approx(shown, rel=5e-4, abs=1e-30)


def test_tensor_behind_a_downsampled_preview_is_whole(server):
    run = server.run("tp_mlp", 2, {"seq_len": 64, "hidden": 48})
    got = events(server, run["id"])
    [y] = [e["tensor"] for e in got if e["kind"] == "tensor" and e["name"] == "Y" and e["rank"] == 1]
    assert y["shape"] == [64, 48] and y["exact"] is False
    assert len(y["preview"]) == 32 and len(y["preview"][0]) == 32
    full = web.get(f"{server.url}/api/runs/{run['id']}/tensors/{y['id']}").json()
    assert len(full["values"]) == 64 * 48
    assert min(full["values"]) == pytest.approx(y["stats"]["min"], rel=1e-6)
    assert max(full["values"]) == pytest.approx(y["stats"]["max"], rel=1e-6)
    assert sum(full["values"]) / len(full["values"]) == pytest.approx(y["stats"]["mean"], rel=1e-4, abs=1e-6)


def test_unknown_tensor_of_a_known_run_is_a_404(server, lesson_runs):
    run_id = lesson_runs["tp_mlp", 1]["run"]["id"]
    for tensor_id in ("r9t999", "no-such", "a.b"):
        response = web.get(f"{server.url}/api/runs/{run_id}/tensors/{tensor_id}")
        assert response.status_code == 404
        assert tensor_id in response.json()["detail"]


def _strict_json(text: str):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("lesson", ["tp_mlp", "sp_mlp"])
def test_trace_json_is_a_chrome_trace_of_the_run(server, lesson_runs, lesson):
    run = lesson_runs[lesson, 4]["run"]
    got = lesson_runs[lesson, 4]["events"]
    response = web.get(f"{server.url}/api/runs/{run['id']}/trace.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    trace = _strict_json(response.text)
    entries = trace["traceEvents"]
    assert trace["displayTimeUnit"] == "ms"
    for entry in entries:
        assert entry["ph"] in ("M", "X", "s", "f")
        assert isinstance(entry["pid"], int) and isinstance(entry["tid"], int)
    names = {e["pid"]: e["args"]["name"] for e in entries if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {r: f"rank {r}" for r in range(4)}
    slices = [e for e in entries if e["ph"] == "X"]
    spans = [e for e in got if e.get("phase") == "end" and e["rank"] is not None]
    assert len(slices) == len(spans)
    for s in slices:
        assert s["ts"] >= 0 and s["dur"] > 0
        assert s["tid"] == {"compute": 1, "collective": 2}[s["cat"]]
    collective_slices = [s for s in slices if s["cat"] == "collective"]
    assert all({"cseq", "group", "bytes", "site"} <= s["args"].keys() for s in collective_slices)


def test_cancelling_a_finished_run_changes_nothing(server, lesson_runs):
    run = lesson_runs["tp_mlp", 1]["run"]
    response = web.delete(f"{server.url}/api/runs/{run['id']}")
    assert response.status_code == 200
    assert response.json()["status"] == "done"
    assert events(server, run["id"]) == lesson_runs["tp_mlp", 1]["events"]


def test_runs_are_listed_newest_first(server, lesson_runs):
    listed = web.get(f"{server.url}/api/runs", params={"limit": 1_000_000}).json()
    ids = [r["id"] for r in listed]
    mine = [entry["run"]["id"] for entry in lesson_runs.values()]
    assert set(mine) <= set(ids)
    assert [i for i in ids if i in mine] == mine[::-1]
    assert [r["created_at"] for r in listed] == sorted((r["created_at"] for r in listed), reverse=True)
    assert len(web.get(f"{server.url}/api/runs", params={"limit": 2}).json()) == 2
    assert Path(server.data_dir, "runs", mine[0], "events.jsonl").exists()
