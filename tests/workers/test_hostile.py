"""The hostile corpus: learner code that attacks the machine ends contained with a clear reason,
and nothing outside the sandbox is touched."""

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests import web
from workers import sandbox
from workers.judge import judge

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")

REFERENCE = (Path(__file__).resolve().parents[2] / "workers/problems/fg_operators/reference.py").read_text()
# far from anything the reference solution needs, even on a loaded machine; each attack below
# tightens the one limit it must hit
ROOMY = dict(wall_s=150, cpu_s=60, memory_mb=3072, job_memory_mb=8192, processes=64, file_mb=16, tmp_mb=64)


def attack(code: str) -> str:
    """The reference solution with hostile code run when the module loads. The import screen is
    not the boundary — `__import__` walks past it — the sandbox is."""
    return REFERENCE + "\nos = __import__('os')\nsocket = __import__('socket')\npathlib = __import__('pathlib')\n" \
        + "signal = __import__('signal')\n\n" + code


def in_one_rank(code: str) -> str:
    """`code` run by one rank only (the first to create the file), so that the other three wait for it
    in their first collective, blocked: they use no CPU and no memory meanwhile."""
    return ("try:\n    os.close(os.open('/tmp/attacker', os.O_CREAT | os.O_EXCL))\n    attacker = True\n"
            "except FileExistsError:\n    attacker = False\nif attacker:\n"
            + "".join(f"    {line}\n" for line in code.splitlines()))


# Each attack with the one limit it must hit: that limit tight, every other one far away (ROOMY), so
# that it is hit first even on a machine where dozens of processes share the cores.
ATTACKS = {   # name: (code, its own limit, the reason the verdict gives)
    # one rank spins: each process may use 6 CPU-s, twice what the runner spends importing torch
    # (about 3 CPU-s, so the runner never reaches them first), and the spinning rank gets them
    # within the runner's 75 s even with 25 processes sharing two cores; no memory, no process, no file
    "endless loop": (in_one_rank("while True:\n    pass\n"), {"cpu_s": 6}, "CPU-time limit (6 s)"),
    # no CPU, no memory, no file: only the clock stops it (whether it trips during torch's import or after)
    "sleep": ("__import__('time').sleep(3600)\n", {"wall_s": 6}, "wall-clock limit (6 s)"),
    # the job's 25th process fails to fork: a second of CPU, memory shared copy-on-write
    "fork bomb": ("while True:\n    os.fork()\n", {"processes": 24}, "process limit (24 processes)"),
    # 64 MiB blocks, touched as they come, in one rank: its address space runs out after a fraction of
    # a second of CPU, far under the job's 8 GiB
    "memory hog": (in_one_rank("hog = [bytearray(1 << 26) for _ in range(10_000)]\n"), {"memory_mb": 1280},
                   "memory limit (1280 MiB)"),
    # 1 MiB writes: the fifth is refused; four ranks' files fill 16 of the 64 MiB of /tmp
    "huge file": ("with open(f'/tmp/huge{os.getpid()}', 'wb') as f:\n    while True:\n        f.write(b'x' * (1 << 20))\n",
                  {"file_mb": 4}, "file-size limit (4 MiB)"),
}


def limits_of(name: str) -> sandbox.Limits:
    return sandbox.Limits(**{**ROOMY, **ATTACKS[name][1]})


@pytest.fixture(scope="module")
def contained() -> dict:
    """Every attack judged at once (each waits on a limit of its own): {name: (verdict, seconds)}."""
    def judged(name):
        start = time.monotonic()
        verdict = judge("fg_operators", attack(ATTACKS[name][0]), limits_of(name))
        return verdict, time.monotonic() - start

    with ThreadPoolExecutor(len(ATTACKS)) as pool:
        return dict(zip(ATTACKS, pool.map(judged, ATTACKS)))


@pytest.mark.parametrize("name", ATTACKS)
def test_each_attack_is_stopped_by_its_own_limit(contained, name):
    verdict, seconds = contained[name]
    assert (verdict.status, verdict.reason) == ("refused", f"stopped: {ATTACKS[name][2]}"), verdict
    assert seconds < limits_of(name).wall_s + 10


HOG_384_MIB = "held = [bytearray(1 << 26) for _ in range(6)]\n__import__('time').sleep(600)\n"   # in each rank


def test_memory_is_limited_for_the_whole_job_not_per_process():
    """Every rank holds less than its own limit, together more than the job's: stopped (by the job's
    memory cgroup where the machine lets us make one, else by the watchdog, below) — at once, not
    when the runner gives up on the ranks still holding theirs after 75 s."""
    limits = sandbox.Limits(**{**ROOMY, "job_memory_mb": 1024})
    assert 6 * 64 < limits.memory_mb and 4 * 6 * 64 > limits.job_memory_mb      # each rank is within its own
    start = time.monotonic()
    verdict = judge("fg_operators", attack(HOG_384_MIB), limits)
    assert verdict.status == "refused" and verdict.reason == "stopped: memory limit (1024 MiB)", verdict
    assert time.monotonic() - start < 60


def test_the_memory_watchdog_stops_a_job_where_no_cgroup_can_be_made(monkeypatch):
    """No cgroup hierarchy (an unprivileged container): the watchdog summing the job's memory stops it."""
    monkeypatch.setattr(sandbox, "CGROUPS", Path("/nonexistent"))
    # Without a pids cgroup the process limit is an rlimit of the sandbox's user, counting every job that
    # user runs — a second suite's too: roomy here, so that the memory is the limit this job meets first.
    limits = sandbox.Limits(**{**ROOMY, "job_memory_mb": 1024, "processes": 1024})
    verdict = judge("fg_operators", attack(HOG_384_MIB), limits)
    assert verdict.status == "refused" and verdict.reason == "stopped: memory limit (1024 MiB)", verdict


def test_tmp_is_a_bounded_tmpfs():
    fill = "for k in range(4):\n    open(f'/tmp/fill{os.getpid()}-{k}', 'wb').write(b'x' * (3 << 20))\n"
    verdict = judge("fg_operators", attack(fill), sandbox.Limits(**{**ROOMY, "tmp_mb": 8}))
    assert verdict.status == "refused" and "temporary-space limit (8 MiB in /tmp)" in verdict.reason, verdict


def test_an_output_flood_keeps_only_a_tail_and_says_so_and_the_server_keeps_its_memory(server):
    """Each rank prints 32 MiB, judged through the server: the judge keeps 64 KiB of it, the verdict
    is the checks' and its note says how much was printed; the server held none of the 128 MiB."""
    before = _rss_mib(server.proc.pid)
    flood = "for _ in range(32):\n    print('x' * (1 << 20))\n"
    verdict = web.post(f"{server.url}/api/problems/fg_operators/judge", json={"code": attack(flood)}, timeout=300).json()
    assert verdict["status"] == "passed", verdict
    printed = int(verdict["note"].split("stdout ")[1].split(" bytes")[0].replace(",", ""))
    assert printed >= 4 * 32 * (1 << 20) and "only the last 64 KiB" in verdict["note"]
    assert _rss_mib(server.proc.pid) - before < 30


def _rss_mib(pid: int) -> float:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024


def test_no_network_no_data_no_other_submissions_no_signals_no_root_only_files(tmp_path):
    """One submission probes every way out, from inside, and raises naming any that was open:
    root-only and the server's own files, the network, the data dir, the server's processes."""
    secret = tmp_path / "data" / "runs" / "secret.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("another user's submission")
    # /root shows only the Python installation's folders the sandbox binds there (.pyenv; .local where
    # the server's user has a site-packages of its own)
    python_in_root = {Path(p).relative_to("/root").parts[0] for p in sandbox._python_roots() if p.startswith("/root/")}
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
if os.path.isdir("/root") and set(os.listdir("/root")) - {python_in_root!r}:
    found.append("/root")
for path in ["/etc/shadow", "/root/.bash_history"]:     # root-only whatever the server runs as; not bound
    try:
        open(path).read()
        found.append(path)
    except (PermissionError, FileNotFoundError):
        pass
try:
    os.kill({os.getpid()}, signal.SIGTERM)      # the test process: not visible from inside
    found.append("signal")
except OSError:
    pass
pathlib.Path(f"/tmp/link{{os.getpid()}}").symlink_to("/etc/passwd")   # planted for the server to follow: it never reads /tmp
if found:
    raise RuntimeError("escaped: " + ", ".join(found))
"""
    verdict = judge("fg_operators", attack(probe), sandbox.Limits(**ROOMY))
    assert verdict.status == "passed", verdict
    assert secret.read_text() == "another user's submission"


def test_the_server_keeps_serving_while_a_fork_bomb_is_judged(server):
    """A hostile submission through the server's API while a lesson runs: the lesson finishes, its
    checks pass, and the bomb ends contained."""
    from concurrent.futures import ThreadPoolExecutor as Pool

    bomb = attack("while True:\n    os.fork()\n")
    with Pool(1) as pool:
        judged = pool.submit(web.post, f"{server.url}/api/problems/fg_operators/judge",
                             json={"code": bomb}, timeout=300)
        run = server.run("tp_mlp", 2)
        verdict = judged.result()
    assert run["status"] == "done" and all(c["passed"] for c in run["checks"])
    assert verdict.status_code == 200, verdict.text
    assert verdict.json()["status"] == "refused" and "process limit" in verdict.json()["reason"]
