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
