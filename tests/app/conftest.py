"""A second live server for the tests that need other limits than the session server's."""

from __future__ import annotations

import pytest

from tests.conftest import LiveServer


@pytest.fixture(scope="session")
def limited_server(tmp_path_factory) -> LiveServer:
    """A server with `--time-limit 3 --max-ranks 2 --max-concurrent-runs 1` and one queued run at most."""
    live = LiveServer(tmp_path_factory.mktemp("paralab-limited"), "--time-limit", "3", "--max-ranks", "2",
                      "--max-concurrent-runs", "1", env={"PARALAB_MAX_QUEUED_RUNS": "1"}).start()
    yield live
    live.stop()


@pytest.fixture(scope="session")
def planted_server(tmp_path_factory) -> LiveServer:
    """A server whose lessons include every copy with a planted bug (tests/app/planted.py PLANTED)."""
    from tests.app.planted import PLANTED, plant, server_with

    folder = tmp_path_factory.mktemp("planted")
    for new_id, (lesson, file, line, bug) in PLANTED.items():
        plant(folder, lesson, new_id, file, line, bug)
    live = server_with(folder, tmp_path_factory.mktemp("planted-data"))
    yield live
    live.stop()


# Every lesson at 2 and 4 ranks, plus the variants whose logs are the busiest: run once per session and
# shared by the tests that check a property of every lesson's log (causal order, the protocol).
EVERY_LESSON_PARAMS = {   # default parameters, except where they do not fit the world size or would wait long
    ("three_d", 2): {"tp": 2, "pp": 1, "dp": 1},
    ("three_d", 4): {"tp": 1, "pp": 2, "dp": 2},
    ("deadlock", 2): {"timeout_s": 1},
    ("deadlock", 4): {"timeout_s": 1},
    ("dp", 4): {"bucketed": True},
    ("pp", 4): {"slow_stage": 1},
}
EVERY_LESSON_VARIANTS = [("tp_mlp", 4, {"mistake": "swap_f_g"}), ("zero", 4, {"stage": 2}), ("zero", 4, {"stage": 3}),
                         ("collectives", 4, {"op": "broadcast"}), ("collectives", 4, {"op": "reduce"}),
                         ("collectives", 4, {"op": "gather"}), ("collectives", 4, {"op": "scatter"}),
                         ("collectives", 4, {"op": "send_recv"})]


@pytest.fixture(scope="session")
def every_lesson_logs(server) -> list[dict]:
    """[{"spec": (lesson, world, params), "variant": bool, "run", "events"}]: every lesson of the
    repository at 2 and 4 ranks, then the variants."""
    from tests.app.helpers import run_all
    from workers.lessons import LESSONS, LESSONS_DIR

    own = [lesson for lesson in LESSONS.values() if lesson.dir.parent == LESSONS_DIR]
    base = [(lesson.id, world, dict(EVERY_LESSON_PARAMS.get((lesson.id, world), {})))
            for lesson in own for world in (2, 4) if world in lesson.world_sizes]
    results = run_all(server, base + EVERY_LESSON_VARIANTS, in_flight=4, timeout=300)
    return [{"spec": spec, "variant": i >= len(base), **result}
            for i, (spec, result) in enumerate(zip(base + EVERY_LESSON_VARIANTS, results))]
