"""The source panel can show every line an event names: each `site` of a lesson's run lies in one
of the files the lesson lists (a lesson that calls another lesson's code lists that file too)."""

from __future__ import annotations

import pytest

from tests import web
from tests.app.helpers import events

SMALL_RUNS = [
    ("tp_mlp", 2, {}), ("sp_mlp", 2, {}), ("collectives", 2, {"op": "all_gather"}), ("ring_allreduce", 3, {}),
    ("pp", 2, {"microbatches": 2}), ("pp", 2, {"schedule": "Interleaved1F1B", "virtual_stages": 2, "microbatches": 2}),
    ("dp", 2, {}), ("zero", 2, {}), ("tp_attention", 2, {}), ("three_d", 8, {}),
    ("deadlock", 2, {"bug": "op_mismatch", "timeout_s": 1}), ("every_kind", 2, {}), ("context_parallel", 2, {}),
    ("expert_parallel", 2, {}), ("dtensor_moves", 2, {}), ("fsdp2", 2, {}), ("dtensor", 2, {}),
]


def test_every_lesson_is_covered(server):
    """`script` runs the user's own file, shown from the run itself (tests/app/test_script_runs.py)."""
    listed = {lesson["id"] for lesson in web.get(f"{server.url}/api/lessons").json()}
    assert listed - {"crash", "script"} == {lesson for lesson, _, _ in SMALL_RUNS}


@pytest.mark.parametrize("lesson, world_size, params", SMALL_RUNS)
def test_every_site_is_in_a_file_the_page_shows(server, lesson, world_size, params):
    run = server.run(lesson, world_size, params)
    assert run["status"] == ("failed" if lesson == "deadlock" else "done"), run["error"]
    shown = {source["path"] for source in web.get(f"{server.url}/api/lessons/{lesson}").json()["sources"]}
    sites = {e["site"].rsplit(":", 1)[0] for e in events(server, run["id"]) if e.get("site")}
    assert sites, "no event named a line"
    assert sites <= shown, f"sites outside the shown files: {sorted(sites - shown)}"
