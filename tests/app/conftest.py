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


# Every lesson at 2 and 4 ranks, plus the variants whose logs are the busiest: run once per session and
# shared by the tests that check a property of every lesson's log (causal order, the protocol).
EVERY_LESSON_EXTRA = [("tp_mlp", 4, {"mistake": "swap_f_g"}), ("zero", 4, {"stage": 2}), ("zero", 4, {"stage": 3}),
                      ("dp", 4, {"bucketed": True}), ("collectives", 4, {"op": "broadcast"}),
                      ("collectives", 4, {"op": "reduce"}), ("collectives", 4, {"op": "gather"}),
                      ("collectives", 4, {"op": "scatter"}), ("collectives", 4, {"op": "send_recv"})]
PARAMS = {("deadlock", 2): {"timeout_s": 2}, ("deadlock", 4): {"timeout_s": 2},
          ("three_d", 2): {"tp": 2, "pp": 1, "dp": 1}, ("three_d", 4): {"tp": 2, "pp": 1, "dp": 2}}


@pytest.fixture(scope="session")
def every_lesson_logs(server) -> list[dict]:
    """[{"spec": (lesson, world, params), "run", "events"}] for every lesson at 2 and 4 ranks."""
    from tests.app.helpers import run_all
    from workers.lessons import LESSONS

    specs = [(lesson.id, world, dict(PARAMS.get((lesson.id, world), {})))
             for lesson in LESSONS.values() for world in (2, 4) if world in lesson.world_sizes] + EVERY_LESSON_EXTRA
    results = run_all(server, specs, in_flight=4, timeout=300)
    return [{"spec": spec, **result} for spec, result in zip(specs, results)]
