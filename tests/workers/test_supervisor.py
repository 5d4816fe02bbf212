"""The supervisor's reaping: which ranks failed on their own and which it stopped.

`_wait_for` reaps with waitpid(-1), so it runs in a fresh interpreter whose only children are the
fake ranks (never in the test process, whose children include the test servers)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def wait_for(ranks_code: str, time_limit_s: float) -> dict:
    script = textwrap.dedent(f"""
        import json, os, signal, time
        from workers.supervisor import _wait_for

        def rank(delay, code=0, sig=None):
            pid = os.fork()
            if pid == 0:
                time.sleep(delay)
                if sig:
                    os.kill(os.getpid(), sig)
                os._exit(code)
            return pid

        ranks = {ranks_code}
        time.sleep(0.3)            # whoever dies at once is a zombie before the supervisor looks
        exits, timed_out = _wait_for(ranks, {time_limit_s})
        print(json.dumps({{"exits": exits, "timed_out": timed_out}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_every_rank_exits_cleanly():
    report = wait_for("{rank(0): 0, rank(0.05): 1}", 10)
    assert report == {"exits": [{"rank": 0, "code": 0, "stopped": False},
                                {"rank": 1, "code": 0, "stopped": False}], "timed_out": False}


def test_ranks_that_fail_together_are_all_failures_and_the_rest_are_stopped():
    """Two ranks die at once (one, say, cut off by the other): whichever is reaped first, neither
    is taken for a rank the supervisor stopped; the one still running is stopped."""
    report = wait_for("{rank(0, code=1): 0, rank(0, code=3): 1, rank(0, sig=signal.SIGSEGV): 2, rank(30): 3}", 10)
    assert report["timed_out"] is False
    assert report["exits"] == [
        {"rank": 0, "code": 1, "stopped": False},
        {"rank": 1, "code": 3, "stopped": False},
        {"rank": 2, "code": -11, "stopped": False},
        {"rank": 3, "code": -9, "stopped": True},
    ]


def test_a_rank_killed_by_someone_else_is_a_failure():
    report = wait_for("{rank(0, sig=signal.SIGKILL): 0, rank(30): 1}", 10)
    assert report["exits"] == [{"rank": 0, "code": -9, "stopped": False}, {"rank": 1, "code": -9, "stopped": True}]


def test_time_limit_stops_every_rank():
    report = wait_for("{rank(30): 0, rank(30): 1}", 0.5)
    assert report == {"exits": [{"rank": 0, "code": -9, "stopped": True},
                                {"rank": 1, "code": -9, "stopped": True}], "timed_out": True}


def test_a_rank_that_raises_before_its_channel_opens_says_so_on_its_output():
    """A rank that cannot reach the server's event port has no channel to report on: its traceback goes
    to its output (which the supervisor reports and the run shows), and it exits with status 1."""
    script = textwrap.dedent("""
        import socket, sys
        from workers.launch_request import LaunchRequest
        from workers.supervisor import _rank_status

        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
        request = LaunchRequest(run_id="r", token="t", lesson="collectives", world_size=1,
                                events_address=f"127.0.0.1:{port}", t0=0.0, time_limit_s=5)
        sys.exit(_rank_status(request, 0, "/nonexistent/store"))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    assert "ConnectionRefusedError" in out.stderr and "workers/channel.py" in out.stderr, out.stderr
