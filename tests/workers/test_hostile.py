"""The hostile corpus: learner code that attacks the machine ends contained with a clear reason,
and nothing outside the sandbox is touched."""

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from workers import sandbox
from workers.judge import judge

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")

REFERENCE = (Path(__file__).resolve().parents[2] / "workers/problems/fg_operators/reference.py").read_text()
LIMITS = sandbox.Limits(wall_s=20, cpu_s=10, memory_mb=3072, processes=48, file_mb=4)


def attack(code: str) -> str:
    """The reference solution with hostile code run when the module loads. The import screen is
    not the boundary — `__import__` walks past it — the sandbox is."""
    return REFERENCE + "\nos = __import__('os')\nsocket = __import__('socket')\npathlib = __import__('pathlib')\n" \
        + "signal = __import__('signal')\n\n" + code


def test_endless_loop_is_stopped_by_a_limit():
    start = time.monotonic()
    verdict = judge("fg_operators", attack("while True:\n    pass\n"), LIMITS)
    assert verdict.status == "refused" and ("CPU-time limit" in verdict.reason or "wall-clock" in verdict.reason)
    assert time.monotonic() - start < LIMITS.wall_s + 10


def test_fork_bomb_memory_hog_and_huge_file_are_contained():
    attacks = {
        "fork": "while True:\n    os.fork()\n",
        "memory": "hog = [bytearray(1 << 26) for _ in range(10_000)]\n",
        "file": "with open('/tmp/huge', 'wb') as f:\n    while True:\n        f.write(b'x' * (1 << 20))\n",
    }
    with ThreadPoolExecutor(3) as pool:
        verdicts = dict(zip(attacks, pool.map(lambda c: judge("fg_operators", attack(c), LIMITS), attacks.values())))
    assert "process limit" in verdicts["fork"].reason
    assert "memory limit" in verdicts["memory"].reason
    assert "file-size limit" in verdicts["file"].reason
    assert all(v.status == "refused" for v in verdicts.values())


def test_no_network_no_data_no_other_submissions_no_signals(tmp_path):
    secret = tmp_path / "data" / "runs" / "secret.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("another user's submission")
    probe = f"""
found = []
try:
    socket.create_connection(("1.1.1.1", 80), timeout=2)
    found.append("network")
except OSError:
    pass
for path in [{str(secret)!r}, {str(secret.parent.parent)!r}, "/home", "/srv", "/var/lib"]:
    if pathlib.Path(path).exists():
        found.append(path)
if os.path.isdir("/root") and set(os.listdir("/root")) - {{".pyenv"}}:                  # only the Python installation is bound there
    found.append("/root")
try:
    os.kill({os.getpid()}, signal.SIGTERM)      # the test process: not visible from inside
    found.append("signal")
except OSError:
    pass
pathlib.Path("/tmp/link").symlink_to("/etc/passwd")   # planted for the server to follow: it never reads /tmp
if found:
    raise RuntimeError("escaped: " + ", ".join(found))
"""
    verdict = judge("fg_operators", attack(probe), LIMITS)
    assert verdict.status == "passed", verdict
    assert secret.read_text() == "another user's submission"


def test_reading_the_servers_files_fails_inside():
    verdict = judge("fg_operators", attack("open('/root/.bash_history').read()\n"), LIMITS)
    assert verdict.status == "failed" and "No such file" in verdict.reason


def test_the_server_keeps_serving_while_a_fork_bomb_is_judged(server):
    """A hostile submission through the server's API while a lesson runs: the lesson finishes, its
    checks pass, and the bomb ends contained."""
    import httpx
    from concurrent.futures import ThreadPoolExecutor as Pool

    bomb = attack("while True:\n    os.fork()\n")
    with Pool(1) as pool:
        judged = pool.submit(httpx.post, f"{server.url}/api/problems/fg_operators/judge",
                             json={"code": bomb}, timeout=300)
        run = server.run("tp_mlp", 2)
        verdict = judged.result()
    assert run["status"] == "done" and all(c["passed"] for c in run["checks"])
    assert verdict.status_code == 200, verdict.text
    assert verdict.json()["status"] == "refused" and "process limit" in verdict.json()["reason"]
