"""A rank traced by workers/job_hook (what `paralab trace` puts on PYTHONPATH): who it says it is,
that the hook leaves other processes alone, and that a rank whose server is down runs to the end.
Real rank processes (gloo, one rank: no torchrun needed); torchrun itself: tests/app/test_torchrun_jobs.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from app.cli_trace import HOOK_DIR, job_environment
from tests import web
from tests.conftest import REPO, free_port
from workers.job_sender import MAX_SCRIPT_CHARS
from workers.traced_job import identity_from_environment, main_script

JOB = REPO / "tests" / "app" / "jobs" / "ring_job.py"


def test_the_script_a_rank_runs_is_what_its_page_shows(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch  # 训练\n")
    assert main_script([str(script), "--epochs", "2"]) == {"path": str(script.resolve()), "text": "import torch  # 训练\n"}
    assert main_script([str(JOB)])["path"] == "tests/app/jobs/ring_job.py"       # inside the repository: as its sites say
    assert main_script(["-m"]) is None                                            # python -m: no file to show
    assert main_script([str(tmp_path / "gone.py")]) is None
    (tmp_path / "latin1.py").write_bytes(b"# caf\xe9\n")
    assert main_script([str(tmp_path / "latin1.py")]) is None                     # not UTF-8
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_SCRIPT_CHARS // 6 + 1))
    assert main_script([str(tmp_path / "long.py")]) is None                       # past what a join carries


def test_a_rank_is_named_by_torchruns_variables():
    env = {"RANK": "3", "WORLD_SIZE": "4", "GROUP_RANK": "1", "TORCHELASTIC_RUN_ID": "exp7",
           "TORCHELASTIC_RESTART_COUNT": "2", "PARALAB_HOSTNAME": "gpu-b"}
    who = identity_from_environment(env)
    assert (who.job, who.rank, who.world_size, who.node, who.host) == ("exp7/2", 3, 4, 1, "gpu-b")
    without_id = identity_from_environment({"RANK": "0", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "none",
                                            "MASTER_ADDR": "10.0.0.5", "MASTER_PORT": "29500"})
    assert without_id.job == "10.0.0.5:29500/0"
    assert identity_from_environment({"PARALAB_SERVER": "http://x"}) is None    # torchrun's agent: not a rank


def test_the_hook_leaves_other_processes_alone_and_runs_the_sitecustomize_it_hides(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("print('the hidden sitecustomize ran')\n")
    env = {**os.environ, "PARALAB_SERVER": "http://127.0.0.1:9", "PYTHONPATH": f"{HOOK_DIR}{os.pathsep}{tmp_path}"}
    env.pop("RANK", None)
    out = subprocess.run([sys.executable, "-c", "import sys; print('workers.traced_job' in sys.modules)"],
                         env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.stdout.split() == ["the", "hidden", "sitecustomize", "ran", "False"], out.stderr


def test_a_rank_whose_server_is_down_runs_to_the_end_and_says_what_it_dropped(tmp_path):
    closed = free_port()                   # nothing listens there
    env = {**os.environ, **job_environment(f"http://127.0.0.1:{closed}", None),
           "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    out = subprocess.run([sys.executable, str(JOB)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "rank 0 of 1: all done" in out.stdout
    dropped = [line for line in out.stderr.splitlines() if line.startswith("paralab: rank 0 dropped")]
    # an all_reduce, an all_gather and a barrier: a begin and an end each, and the tensors kept
    assert dropped and dropped[0].startswith("paralab: rank 0 dropped "), out.stderr
    count, total = (int(n) for n in dropped[0].split("dropped ")[1].split(" events")[0].split(" of "))
    assert count == total >= 6
    assert f"127.0.0.1:{closed} could not be reached" in dropped[0]


def test_ranks_sharing_stderr_never_run_their_lines_together():
    """torchrun's ranks share its stderr; under PYTHONUNBUFFERED a `print` writes its newline apart, and
    two ranks' "dropped" lines once ran together on one line. Each of paralab's lines is one write."""
    code = ("import sys\nfrom workers.traced_job import _say\n"
            "for i in range(1000): _say(f'paralab: rank {sys.argv[1]} line {i}')")
    read, write = os.pipe()
    ranks = [subprocess.Popen([sys.executable, "-c", code, str(rank)], stderr=write, cwd=REPO,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"}) for rank in (0, 1)]
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        lines = stream.read().decode().splitlines()
    assert [rank.wait(timeout=60) for rank in ranks] == [0, 0]
    assert len(lines) == 2000
    assert [line for line in lines if line.count("paralab: ") != 1 or not line.startswith("paralab: rank ")] == []


@pytest.mark.timeout(300)          # the live server's start and a rank: minutes on two loaded cores
def test_a_rank_stopped_by_sigterm_says_goodbye_and_still_dies_of_it(server, tmp_path):
    """torchrun stops the other ranks with SIGTERM when one fails: the run says so at once."""
    env = {**os.environ, **job_environment(server.url, None), "PARALAB_JOB": f"sigterm-{free_port()}",
           "JOB_HOLD_FILE": str(tmp_path / "never"), "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    rank = subprocess.Popen([sys.executable, str(JOB)], env=env, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        page = None
        deadline = time.monotonic() + 90
        while page is None and time.monotonic() < deadline:      # the rank announces its run's page on stderr
            line = rank.stderr.readline()
            page = line.split("traced live at ")[1].strip() if "traced live at" in line else None
        run_id = page.rsplit("/", 1)[1]
        while time.monotonic() < deadline and "all_reduce" not in web.get(f"{server.url}/api/runs/{run_id}/events").text:
            time.sleep(0.1)
        rank.send_signal(signal.SIGTERM)                          # now waiting on the hold file
        assert rank.wait(30) == -signal.SIGTERM
    finally:
        rank.kill()
    run = web.get(f"{server.url}/api/runs/{run_id}").json()
    assert run["status"] == "failed" and run["error"]["kind"] == "stopped", run
    assert run["error"]["message"] == "the launcher stopped rank 0 (SIGTERM) before the end"


@pytest.mark.timeout(300)          # the live server's start and a rank: minutes on two loaded cores
def test_with_the_pth_hook_installed_paralab_server_alone_traces_a_rank(server, tmp_path):
    """`paralab trace --install-hook` in a virtual environment (torch from the system's packages, which
    are not on sys.path yet when .pth files run): a rank started with only PARALAB_SERVER set streams."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(tmp_path / "venv")],
                   check=True, timeout=120)
    python = str(tmp_path / "venv" / "bin" / "python")
    installed = subprocess.run([python, "-m", "app", "trace", "--install-hook"], cwd=REPO, capture_output=True,
                               text=True, timeout=60)
    assert installed.returncode == 0 and "paralab_trace.pth" in installed.stdout, installed.stderr
    job = f"pth-{free_port()}"
    env = {**os.environ, "PARALAB_SERVER": server.url, "PARALAB_JOB": job, "RANK": "0", "WORLD_SIZE": "1",
           "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    env.pop("PYTHONPATH", None)
    out = subprocess.run([python, str(JOB)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0 and "dropped" not in out.stderr, out.stderr
    run = next(r for r in web.get(f"{server.url}/api/runs").json() if r["params"].get("job") == f"{job}/0")
    assert run["status"] == "done"
    log = web.get(f"{server.url}/api/runs/{run['id']}/events").text
    assert '"op":"all_reduce"' in log and '"op":"barrier"' in log
    # the script, named as its calls' sites name it: the page's Source panel finds their lines in it
    assert (run["params"]["filename"], run["params"]["source"]) == ("tests/app/jobs/ring_job.py", JOB.read_text())
    assert '"site":"tests/app/jobs/ring_job.py:' in log
    removed = subprocess.run([python, "-m", "app", "trace", "--uninstall-hook"], cwd=REPO, capture_output=True, text=True)
    assert removed.returncode == 0 and not list((tmp_path / "venv").rglob("paralab_trace.pth"))
