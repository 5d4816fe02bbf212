"""Shared fixtures: a real paralab server (a `python -m app` subprocess on a free loopback port, with
its own data dir and the tests' extra lessons), and helpers to start runs and wait for them."""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests import web

REPO = Path(__file__).resolve().parent.parent
# argon2's default costs ~0.1–0.3 CPU-s a sign-in: the suite's servers and apps hash with its cheapest
# parameters (the server warns about it at start); tests/app/test_passwords.py checks the default's rehash.
os.environ.setdefault("PARALAB_PASSWORD_HASH_PROFILE", "CHEAPEST")
EXTRA_LESSONS = REPO / "tests" / "lessons_extra"
BROWSER_TESTS = REPO / "tests" / "browser"

# `slow`: what the fast loop (`make test-fast`) leaves to `make test`. A test is slow when it needs one
# of these fixtures (a server of its own: 10 s or more on two cores; `finished`: a lesson's every case
# run for its module), when it is a parametrized test on the live server past its first case (every
# case is a real run: the fast loop runs one of each), or when it is listed here, by file or by
# file::test (measured with --durations: several seconds).
SLOW_FIXTURES = {"server_factory", "limited_server", "bounded_server", "lab", "spawn_server", "finished", "every_lesson_logs", "planted_server"}
SLOW_TESTS = {
    "tests/app/test_hangs.py",                  # every bug waits for the hang timeout (10 s)
    "tests/app/test_pp_lesson.py::test_measured_bubble_is_the_formulas",
    "tests/app/test_zero_lesson.py::test_a_reduce_scatter_that_sums_fails_the_gradient_checks",   # a planted copy
    "tests/app/test_rooms.py::test_a_stalled_follower_does_not_slow_the_other_twenty",
    "tests/workers/test_judge.py::test_without_a_sandbox_learner_code_is_refused_unless_the_operator_allows_it",
    # Each starts Python processes of its own (a command, a launcher, spawned ranks), each importing
    # torch (~3 CPU-s), or runs a command that takes seconds (docker-compose).
    "tests/app/test_compose.py",
    "tests/app/test_orphans.py",                # a server of its own, as pid 1 of a PID namespace
    "tests/app/test_run_cli.py",
    "tests/app/test_cli_trace.py",
    "tests/app/test_cli.py::test_help_lists_the_flags",
    "tests/app/test_cluster_placement.py::test_the_embedded_default_never_imports_ray",
    "tests/app/test_hostile_requests.py::test_a_reply_to_an_abandoned_request_is_never_taken_for_the_next_ones",
    "tests/workers/test_p2p.py",
    "tests/workers/test_supervisor.py::test_a_rank_that_raises_before_its_channel_opens_says_so_on_its_output",
    "tests/workers/test_traced_job.py",
    "tests/workers/test_warm.py",
    "tests/workers/test_judge.py::test_unsandboxed_code_does_not_get_the_servers_environment",
    "tests/workers/test_judge.py::test_the_warm_checker_forks_each_check_and_outlives_a_kill",
    "tests/workers/test_judge.py::test_a_deadlock_is_stopped_early_with_the_hang_report_naming_ranks_calls_and_lines",
    "tests/workers/test_judge.py::test_the_rank_that_raised_is_named_not_the_peers_that_lost_their_connection_to_it",
}


# Made once per session and shared by several modules: with `-n` (pytest-xdist), the modules that use
# one of these run on the same worker, so that it is made once there (the plain `server` is cheap
# enough to start on each worker).
SHARED_FIXTURES = ("every_lesson_logs", "limited_server", "planted_server", "spawn_server")


@pytest.hookimpl(tryfirst=True)      # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Marks each test by what it needs, for `-m` (see pyproject.toml): `browser` for every test under
    tests/browser; `sandbox` for every test that skips where bubblewrap is missing (it judges learner
    code in the sandbox) — and a test marked `sandbox` by hand skips there; `slow` as told above. And
    groups them for `--dist loadgroup`."""
    if config.pluginmanager.hasplugin("xdist"):
        group_by_module(items)
    first_cases: set[str] = set()
    for item in items:
        if item.path.is_relative_to(BROWSER_TESTS):
            item.add_marker(pytest.mark.browser)
        if any("bubblewrap" in mark.kwargs.get("reason", "") for mark in item.iter_markers("skipif")):
            item.add_marker(pytest.mark.sandbox)
        elif item.get_closest_marker("sandbox") and not sandbox_available():
            item.add_marker(pytest.mark.skip(reason="bubblewrap is not available"))
        if is_slow(item, first_cases):
            item.add_marker(pytest.mark.slow)


def group_by_module(items) -> None:
    """An `xdist_group` per module (its module fixtures are made once, on one worker), modules that
    share one of SHARED_FIXTURES in one group."""
    groups: dict[Path, str] = {}
    for item in items:
        shared = [name for name in SHARED_FIXTURES if name in getattr(item, "fixturenames", ())]
        groups[item.path] = shared[0] if shared else groups.get(item.path, str(item.path.relative_to(REPO)))
    for item in items:
        item.add_marker(pytest.mark.xdist_group(groups[item.path]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Outside tests/browser, the thread's event loop is not marked running — from the first fixture a
    test sets up to the last it tears down — so that its `asyncio.run` works: Playwright's sync API marks
    its own loop so while the browser lives (the whole session, tests/browser/conftest.py)."""
    playwright_loop = asyncio.events._get_running_loop()
    hide = playwright_loop is not None and not item.path.is_relative_to(BROWSER_TESTS)
    if hide:
        asyncio.events._set_running_loop(None)
    try:
        yield
    finally:
        if hide and playwright_loop.is_running():   # not when this test's teardown closed the browser
            asyncio.events._set_running_loop(playwright_loop)


@functools.cache
def sandbox_available() -> bool:
    from workers import sandbox
    return sandbox.available()


def is_slow(item, first_cases: set[str]) -> bool:
    fixtures = set(getattr(item, "fixturenames", ()))
    path = str(item.path.relative_to(REPO))
    name = f"{path}::{getattr(item, 'originalname', item.name)}"
    if fixtures & SLOW_FIXTURES or path in SLOW_TESTS or name in SLOW_TESTS:
        return True
    if "server" in fixtures and hasattr(item, "callspec"):
        if name in first_cases:
            return True
        first_cases.add(name)
    return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PortTaken(RuntimeError):
    pass


class LiveServer:
    """One server process. `url` is http://127.0.0.1:PORT; `ws_url` the ws:// equivalent. `repo`: the checkout
    it runs from (another one: a benchmark's baseline); `prefix`: a command the server runs under (`proc` is then
    that command's process)."""

    def __init__(self, data_dir: Path, *args: str, env: dict | None = None, repo: Path = REPO,
                 prefix: tuple[str, ...] = ()):
        self.data_dir = data_dir
        self.repo = repo
        self.prefix = prefix
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}"
        self.args = args
        lessons = repo / EXTRA_LESSONS.relative_to(REPO)
        self.env = {**os.environ, "PARALAB_LESSONS_PATH": str(lessons), **(env or {})}
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180) -> "LiveServer":   # a loaded 2-core machine can take a minute
        for _ in range(3):   # the free port may be taken before the server binds it (a suite beside this one)
            try:
                return self._start(timeout)
            except PortTaken:
                self.port = free_port()
                self.url, self.ws_url = f"http://127.0.0.1:{self.port}", f"ws://127.0.0.1:{self.port}"
        return self._start(timeout)

    def _start(self, timeout: float) -> "LiveServer":
        log_path = self.data_dir / f"server-{self.port}.log"
        log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "app", "--port", str(self.port), "--data-dir", str(self.data_dir),
             "--log-level", "warning", *self.args],
            cwd=self.repo, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                text = log_path.read_text()
                if "address already in use" in text:
                    raise PortTaken(self.port)
                raise RuntimeError(f"server exited: {text}")
            try:
                if web.get(self.url + "/healthz", timeout=1).json().get("launcher") == "ready":
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise TimeoutError("server did not become ready")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    # ---- helpers the tests share ----
    def start_run(self, lesson: str, world_size: int, params: dict | None = None, **extra) -> dict:
        response = web.post(self.url + "/api/runs", timeout=60,     # httpx's 5 s: too short on loaded cores
                            json={"lesson": lesson, "world_size": world_size, "params": params or {}, **extra})
        assert response.status_code == 201, response.text
        return response.json()

    def wait_run(self, run_id: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = web.get(f"{self.url}/api/runs/{run_id}", timeout=60).json()
            if run["status"] in ("done", "failed", "cancelled"):
                return run
            time.sleep(0.05)
        raise TimeoutError(f"run {run_id} did not finish")

    def run(self, lesson: str, world_size: int, params: dict | None = None, **extra) -> dict:
        return self.wait_run(self.start_run(lesson, world_size, params, **extra)["id"])


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> LiveServer:
    live = LiveServer(tmp_path_factory.mktemp("paralab-data")).start()
    yield live
    live.stop()


@pytest.fixture
def server_factory(tmp_path):
    """Start servers (e.g. twice on one data dir, for restart tests); all are stopped afterwards."""
    started: list[LiveServer] = []

    def make(data_dir: Path | None = None, *args: str, **kwargs) -> LiveServer:
        live = LiveServer(data_dir or tmp_path, *args, **kwargs).start()
        started.append(live)
        return live

    yield make
    for live in started:
        live.stop()


@pytest.fixture(scope="session")
def spawn_mode_server(tmp_path_factory) -> LiveServer:
    """A server in spawn mode (macOS's start method, forced with PARALAB_START_METHOD=spawn): its standby
    ranks each import torch, so it is started once for the modules that need it. SPAWN_TEST_TAG, inherited
    by every process it starts, tells its slot and standbys apart from another server's. Its limits are
    roomy: a run's clock starts before the slot spawns the standbys it lacks, each importing torch,
    which takes a minute on loaded cores (this server proves spawning, not the limits)."""
    data_dir = tmp_path_factory.mktemp("paralab-spawn")
    live = LiveServer(data_dir, "--time-limit", "180", "--hang-timeout", "30", env={"PARALAB_START_METHOD": "spawn", "PARALAB_STANDBY_RANKS": "2",
                                     "SPAWN_TEST_TAG": str(data_dir)})
    yield live
    live.stop()


@pytest.fixture
def spawn_server(spawn_mode_server) -> LiveServer:
    """The spawn-mode server, started on first use and again where a test before this one stopped it."""
    if spawn_mode_server.proc is None or spawn_mode_server.proc.poll() is not None:
        spawn_mode_server.start()
    return spawn_mode_server
