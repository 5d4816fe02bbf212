"""`paralab run FILE.py -n N [-- ARGS]` (issue #13, point 2), as a user types it: the script runs on N
ranks of the server, the page's address is printed, each rank's output follows, and the command
exits with the script's status; `--step` starts it in step mode; with no server running it starts one."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

from tests import web
from tests.app.helpers import ws_connect
from tests.conftest import REPO, free_port

PAGE = re.compile(r"(http://127\.0\.0\.1:\d+/playground\?run=(\w+))")


def paralab_run(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "run", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture
def script(tmp_path):
    def write(source: str, name: str = "train.py"):
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return str(path)
    return write


def test_a_script_runs_on_n_ranks_with_its_arguments_and_the_page_is_printed(server, script):
    path = script("""
        import sys
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        x = torch.ones(1)
        dist.all_reduce(x)
        print(f"rank {dist.get_rank()} of {x.item():.0f}: {sys.argv[1:]}")
    """)
    done = paralab_run(path, "-n", "3", "--server", server.url, "--", "--epochs", "2")
    assert done.returncode == 0, done.stderr
    url, run_id = PAGE.search(done.stdout).groups()
    assert web.get(url).status_code == 200
    run = web.get(f"{server.url}/api/runs/{run_id}").json()
    assert (run["lesson"], run["world_size"], run["status"]) == ("script", 3, "done")
    assert (run["params"]["filename"], run["params"]["args"]) == ("train.py", ["--epochs", "2"])
    for rank in range(3):
        assert f"---- rank {rank} printed:\nrank {rank} of 3: ['--epochs', '2']\n" in done.stdout
    assert done.stdout.rstrip().endswith("paralab: done")


def test_it_exits_with_the_scripts_status_and_says_where_it_failed(server, script):
    exits = paralab_run(script("import os, sys\nsys.exit(3 if os.environ['RANK'] == '1' else 0)\n"), "--server", server.url)
    assert exits.returncode == 3, exits.stderr
    raises = paralab_run(script("import os\n\nif os.environ['RANK'] == '0':\n    raise KeyError('batch')\n", "bad.py"),
                         "--server", server.url)
    assert raises.returncode == 1
    assert "paralab: failed: rank 0 raised KeyError: 'batch' at bad.py:4" in raises.stderr
    assert 'File "bad.py", line 4, in <module>' in raises.stderr


def test_step_mode_waits_for_the_page(server, script):
    path = script("import torch, torch.distributed as dist\ndist.init_process_group('gloo')\ndist.barrier()\n")
    command = subprocess.Popen([sys.executable, "-m", "app", "run", path, "--step", "--server", server.url],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_id = PAGE.search(command.stdout.readline()).group(2)
        assert "step mode" in command.stdout.readline()
        assert web.get(f"{server.url}/api/runs/{run_id}").json()["step"] is True
        with ws_connect(server, run_id) as ws:
            ws.send(json.dumps({"op": "continue"}))
            assert command.wait(60) == 0, command.stderr.read()
    finally:
        command.kill()


def test_bad_input_gets_a_clear_message_and_status_2(server, script, tmp_path):
    missing = paralab_run(str(tmp_path / "nope.py"), "--server", server.url)
    assert (missing.returncode, missing.stderr.strip()) == (2, f"paralab run: no such file: {tmp_path / 'nope.py'}")
    too_many = paralab_run(script("print(1)\n"), "-n", "0", "--server", server.url)
    assert too_many.returncode == 2
    assert "the server refused the run (422): world_size: world_size 0 is not allowed for script" in too_many.stderr


@pytest.mark.slow
def test_with_no_server_running_it_starts_one_that_serves_on(script, tmp_path):
    port = free_port()
    done = paralab_run(script("print('hello')\n"), "-n", "1", "--port", str(port),
                       env={"PARALAB_DATA_DIR": str(tmp_path / "data")}, timeout=240)
    started = re.search(r"started a server at http://127\.0\.0\.1:(\d+) \(pid (\d+);", done.stdout)
    assert started and int(started.group(1)) == port, done.stdout + done.stderr
    pid = int(started.group(2))
    try:
        assert done.returncode == 0, done.stderr
        assert "---- rank 0 printed:\nhello\n" in done.stdout
        assert web.get(f"http://127.0.0.1:{port}/healthz").json()["status"] == "ok"   # it serves on
    finally:
        os.killpg(pid, signal.SIGTERM)


def test_paralab_alone_or_with_serve_still_serves_and_a_subcommand_goes_to_its_module(monkeypatch):
    from app import cli
    served, ran = [], []
    monkeypatch.setattr(cli, "serve", served.append)
    monkeypatch.setitem(sys.modules, "tests_fake_sub", type(sys)("tests_fake_sub"))
    sys.modules["tests_fake_sub"].main = lambda argv: ran.append(argv) or 7
    monkeypatch.setitem(cli.SUBCOMMANDS, "fake", "tests_fake_sub")
    cli.main([])
    cli.main(["--port", "9001"])
    cli.main(["serve", "--port", "9002"])
    assert served == [[], ["--port", "9001"], ["--port", "9002"]]
    with pytest.raises(SystemExit) as exited:
        cli.main(["fake", "x.py", "-n", "2"])
    assert (exited.value.code, ran) == (7, [["x.py", "-n", "2"]])
