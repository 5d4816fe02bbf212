"""Settings from PARALAB_* environment variables and command-line flags (flags win)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.cli import parse_settings
from app.settings import REPO_ROOT, Settings

ENV_NAMES = ("HOST", "PORT", "DATA_DIR", "BACKEND", "MAX_RANKS", "RUN_TIME_LIMIT_S", "MAX_CONCURRENT_RUNS",
             "MAX_QUEUED_RUNS", "LOG_LEVEL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV_NAMES:
        monkeypatch.delenv(f"PARALAB_{name}", raising=False)


def test_defaults():
    s = parse_settings([])
    assert (s.HOST, s.PORT, s.DATA_DIR, s.BACKEND, s.MAX_RANKS, s.RUN_TIME_LIMIT_S, s.MAX_CONCURRENT_RUNS) == \
        ("127.0.0.1", 8000, REPO_ROOT / "data", "auto", 16, 60.0, 2)


def test_flags():
    s = parse_settings(["--host", "0.0.0.0", "--port", "9001", "--data-dir", "/tmp/lab", "--backend", "gloo",
                        "--max-ranks", "4", "--time-limit", "2.5", "--max-concurrent-runs", "3",
                        "--log-level", "debug"])
    assert (s.HOST, s.PORT, s.DATA_DIR, s.BACKEND, s.MAX_RANKS, s.RUN_TIME_LIMIT_S, s.MAX_CONCURRENT_RUNS,
            s.LOG_LEVEL) == ("0.0.0.0", 9001, Path("/tmp/lab"), "gloo", 4, 2.5, 3, "debug")


def test_environment_variables(monkeypatch):
    monkeypatch.setenv("PARALAB_PORT", "9100")
    monkeypatch.setenv("PARALAB_MAX_RANKS", "3")
    monkeypatch.setenv("paralab_data_dir", "/srv/paralab")          # not case-sensitive
    monkeypatch.setenv("PARALAB_RUN_TIME_LIMIT_S", "7")
    monkeypatch.setenv("PARALAB_MAX_QUEUED_RUNS", "5")
    s = parse_settings([])
    assert (s.PORT, s.MAX_RANKS, s.DATA_DIR, s.RUN_TIME_LIMIT_S, s.MAX_QUEUED_RUNS) == \
        (9100, 3, Path("/srv/paralab"), 7.0, 5)


def test_flags_override_environment(monkeypatch):
    monkeypatch.setenv("PARALAB_PORT", "9100")
    monkeypatch.setenv("PARALAB_BACKEND", "nccl")
    s = parse_settings(["--port", "9200", "--backend", "gloo"])
    assert (s.PORT, s.BACKEND) == (9200, "gloo")


@pytest.mark.parametrize("argv", [["--backend", "mpi"], ["--port", "eighty"], ["--no-such-flag"]])
def test_bad_flags_exit_with_usage(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_settings(argv)
    assert exc.value.code == 2
    assert "usage: paralab" in capsys.readouterr().err


@pytest.mark.parametrize("env, value", [("PARALAB_BACKEND", "mpi"), ("PARALAB_PORT", "70000"),
                                        ("PARALAB_MAX_RANKS", "0")])
def test_bad_environment_is_refused_naming_the_setting(monkeypatch, env, value):
    monkeypatch.setenv(env, value)
    with pytest.raises(ValidationError, match=env.removeprefix("PARALAB_")):
        Settings()


@pytest.mark.parametrize("argv, name", [(["--max-ranks", "0"], "MAX_RANKS"), (["--time-limit", "0"], "RUN_TIME_LIMIT_S")])
def test_out_of_range_flags_are_refused(argv, name):
    with pytest.raises(ValidationError, match=name):
        parse_settings(argv)


def test_help_lists_the_flags():
    out = subprocess.run([sys.executable, "-m", "app", "--help"], cwd=REPO_ROOT, capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0
    for flag in ("--port", "--data-dir", "--backend", "--max-ranks", "--time-limit"):
        assert flag in out.stdout
