"""Running untrusted learner code contained: bubblewrap, resource limits, a wall clock.

Inside the sandbox a program sees a read-only system (/usr, /etc, the Python installation and
paralab's `workers` package), a private /tmp, the submission (read-only) and nothing else — not the
server's data dir, not other submissions, not the server's processes (own PID namespace), and no
network but its own loopback (gloo ranks talk over it). Limits: CPU seconds, address space, file
size and core dumps by rlimit; processes by the pids cgroup where one can be made (and by rlimit when
the server is not root); wall-clock time by the caller, which kills the sandbox's whole session — as
it does at once when the caller's `stop` event is set (a submission cancelled while it is judged).
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PIDS_CGROUP = Path("/sys/fs/cgroup/pids")
CANCELLED = "cancelled"            # the reason a job stopped by its caller's `stop` event gives
STOP_POLL_S = 0.05                 # how often a running job looks at its `stop` event


@dataclass(frozen=True)
class Limits:
    wall_s: float = 120.0
    cpu_s: int = 120               # per process
    memory_mb: int = 4096          # address space per process (torch maps a lot of virtual memory)
    processes: int = 64
    file_mb: int = 16


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    reason: str | None             # why it was stopped: "wall-clock limit", "memory limit", …, or None


def available() -> bool:
    """Whether bubblewrap can start a sandbox here."""
    if shutil.which("bwrap") is None:
        return False
    probe = subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True)
    return probe.returncode == 0


def _python_roots() -> list[str]:
    """Directories the interpreter and its packages live in (outside /usr they must be bound)."""
    roots = {sys.prefix, sys.base_prefix, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    roots |= {p for p in sys.path if p and os.path.isdir(p) and "site-packages" in p}
    return sorted(r for r in roots if not r.startswith("/usr") and os.path.isdir(r))


def bwrap_command(argv: list[str], job_dir: Path) -> list[str]:
    command = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
               "--uid", "65534", "--gid", "65534", "--hostname", "sandbox",
               "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
               "--ro-bind", str(job_dir), "/job", "--ro-bind", str(REPO / "workers"), "/paralab/workers",
               "--setenv", "PYTHONPATH", "/paralab", "--setenv", "HOME", "/tmp",
               "--setenv", "GLOO_SOCKET_IFNAME", "lo", "--setenv", "OMP_NUM_THREADS", "1",
               "--chdir", "/tmp"]
    for path in ("/usr", "/etc", "/bin", "/lib", "/lib64", "/sbin"):
        if os.path.lexists(path):
            command += (["--symlink", os.readlink(path), path] if os.path.islink(path)
                        else ["--ro-bind", path, path])
    for root in _python_roots():
        command += ["--ro-bind", root, root]
    return command + argv


def _limit_child(limits: Limits, cgroup: Path | None):
    def apply():
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))   # before exec: no fork escapes it
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 2))   # SIGXCPU first: named
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes,) * 2)
    return apply


def _pids_cgroup(limits: Limits) -> Path | None:
    """A pids cgroup of its own, where the machine lets us make one."""
    try:
        cgroup = PIDS_CGROUP / "paralab" / f"job-{os.getpid()}-{time.monotonic_ns()}"
        cgroup.mkdir(parents=True)
        (cgroup / "pids.max").write_text(str(limits.processes))
        return cgroup
    except OSError:
        return None


def _cgroup_hit_limit(cgroup: Path | None) -> bool:
    try:
        return cgroup is not None and int((cgroup / "pids.events").read_text().split()[-1]) > 0
    except (OSError, ValueError, IndexError):
        return False


def _remove(cgroup: Path | None) -> None:
    if cgroup is not None:
        for _ in range(50):
            try:
                cgroup.rmdir()
                return
            except OSError:
                time.sleep(0.02)


def run(argv: list[str], files: dict[str, bytes], limits: Limits = Limits(),
        stop: threading.Event | None = None) -> Outcome:
    """Run `argv` in a fresh sandbox where `files` appear read-only under /job; setting `stop` (from
    another thread) kills it at once, with the reason CANCELLED."""
    with tempfile.TemporaryDirectory(prefix="paralab-job-") as job:
        job_dir = Path(job)
        for name, data in files.items():
            (job_dir / name).write_bytes(data)
        os.chmod(job_dir, 0o755)
        cgroup = _pids_cgroup(limits)
        process = subprocess.Popen(bwrap_command(argv, job_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL, text=True, errors="replace",
                                   preexec_fn=_limit_child(limits, cgroup), start_new_session=True)
        stdout, stderr, reason = supervise(process, limits.wall_s, stop)
        if reason != CANCELLED:
            reason = _reason(process.returncode, stdout + stderr, cgroup, limits) or reason
        _remove(cgroup)
        return Outcome(process.returncode, stdout[-200_000:], stderr[-20_000:], reason)


def supervise(process: subprocess.Popen, wall_s: float, stop: threading.Event | None) -> tuple[str, str, str | None]:
    """Collect the output of `process`, started in a session of its own, until it ends. Its whole
    process group is killed when it ends, when its wall clock runs out, or as soon as `stop` is set
    (the sandbox's PID namespace goes with it). Returns stdout, stderr and why it was stopped, or None."""
    output = {"stdout": "", "stderr": ""}
    readers = [threading.Thread(target=_read, args=(getattr(process, name), output, name), daemon=True)
               for name in output]
    for reader in readers:
        reader.start()
    try:
        reason = _wait(process, wall_s, stop)
    finally:
        _kill_group(process.pid)
        process.wait()
    for reader in readers:
        reader.join(timeout=5)
    return output["stdout"], output["stderr"], reason


def _wait(process: subprocess.Popen, wall_s: float, stop: threading.Event | None) -> str | None:
    """Wait for the process itself (not the pipes: a left-over fork may hold them): None when it ends
    by itself, else why it must be stopped."""
    deadline = time.monotonic() + wall_s
    while (left := deadline - time.monotonic()) > 0:
        if stop is not None and stop.is_set():
            return CANCELLED
        try:
            process.wait(timeout=min(left, STOP_POLL_S))
            return None
        except subprocess.TimeoutExpired:
            pass
    return f"wall-clock limit ({wall_s:g} s)"


def _read(stream, output: dict, name: str) -> None:
    output[name] = stream.read()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reason(code: int, output: str, cgroup: Path | None, limits: Limits) -> str | None:
    if _cgroup_hit_limit(cgroup):
        return f"process limit ({limits.processes} processes)"
    if code in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
        return f"CPU-time limit ({limits.cpu_s} s)"
    if code in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ):
        return f"file-size limit ({limits.file_mb} MiB)"
    return exhausted(output, limits)


def exhausted(text: str, limits: Limits) -> str | None:
    """The limit a program's own error message shows it ran into, if any."""
    if "MemoryError" in text or "Cannot allocate memory" in text or "std::bad_alloc" in text:
        return f"memory limit ({limits.memory_mb} MiB)"
    if "Resource temporarily unavailable" in text or "BlockingIOError" in text:
        return f"process limit ({limits.processes} processes)"
    if "File too large" in text:
        return f"file-size limit ({limits.file_mb} MiB)"
    return None
