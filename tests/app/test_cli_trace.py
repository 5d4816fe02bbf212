"""`paralab trace`: the command runs with the job's variables set, its exit status is the command's,
a server that does not answer is said (and the command runs anyway); `--env` prints the variables."""

from __future__ import annotations

import os
import subprocess
import sys

from app.cli_trace import HOOK_DIR
from tests.conftest import REPO, free_port


def paralab(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def test_the_command_runs_with_the_hook_and_the_server_and_exits_with_its_status():
    down = f"http://127.0.0.1:{free_port()}"
    shown = "import os, sys; print(os.environ['PARALAB_SERVER']); print(os.environ['PYTHONPATH']); sys.exit(3)"
    out = paralab("trace", "--server", down, "--", sys.executable, "-c", shown, env={"PYTHONPATH": "/elsewhere"})
    assert out.returncode == 3
    assert out.stdout.splitlines() == [down, f"{HOOK_DIR}{os.pathsep}/elsewhere"]
    assert f"no server answers at {down}: the job runs" in out.stderr


def test_env_prints_what_a_job_started_another_way_exports():
    out = paralab("trace", "--env", "--server", "http://lab.example:8000", "--token", "s3cret", env={"PYTHONPATH": ""})
    assert out.returncode == 0
    assert out.stdout.splitlines() == ["export PARALAB_SERVER=http://lab.example:8000", f"export PYTHONPATH={HOOK_DIR}",
                                       "export PARALAB_TOKEN=s3cret"]


def test_without_a_command_it_says_what_to_give():
    out = paralab("trace")
    assert out.returncode == 2 and "give the command to run after --" in out.stderr
    missing = paralab("trace", "--server", f"http://127.0.0.1:{free_port()}", "--", "no-such-command-here")
    assert missing.returncode == 127 and "cannot run 'no-such-command-here'" in missing.stderr
