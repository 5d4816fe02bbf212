"""Running untrusted learner code contained: bubblewrap, resource limits, a wall clock.

Inside the sandbox a program sees a read-only system (/usr, /etc, the Python installation and
paralab's `workers` package without the problems' reference solutions), a private /tmp of bounded
size, the submission (read-only) and nothing else — not the server's data dir, not other
submissions, not the server's processes (own PID namespace), not the server's environment (it
starts with a clean one), and no network but its own loopback (gloo ranks talk over it). It runs as
an unprivileged user with no capabilities, whatever the server runs as: a root server drops to
nobody inside (no user namespace, so root's files stay root's); any other server maps its user to
nobody in a user namespace.

Limits: CPU seconds, address space, file size and core dumps per process by rlimit; the memory of
the whole job by a memory cgroup where one can be made, else by a watchdog that sums the job's
resident memory; processes by the pids cgroup where one can be made (else by rlimit) — a job whose
cgroup refused a fork or killed a process for memory is stopped at once; wall-clock
time by the caller, which kills the sandbox's whole session — as it does at once when the caller's
`stop` event is set (a submission cancelled while it is judged). Output is read as it comes and
only its tail kept, so a flood costs the server nothing.
"""

from __future__ import annotations

import contextlib
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
CGROUPS = Path("/sys/fs/cgroup")
CANCELLED = "cancelled"            # the reason a job stopped by its caller's `stop` event gives
STOP_POLL_S = 0.05                 # how often a running job looks at its `stop` event
WATCHDOG_POLL_S = 0.25             # how often the job's memory is summed (no cgroup) or its cgroups read
STOP_WAIT_S = 10.0                 # a stopped sandbox's wait for its namespace to end before bwrap is killed too
OUTPUT_TAIL_BYTES = 64 * 1024      # what is kept of each of stdout and stderr (the end)
NOBODY = 65534
_SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/lib", "/lib64", "/sbin")   # bound read-only into every sandbox


@dataclass(frozen=True)
class Limits:
    wall_s: float = 120.0
    cpu_s: int = 120               # per process
    memory_mb: int = 4096          # address space per process (torch maps a lot of virtual memory)
    job_memory_mb: int = 6144      # resident memory of the whole job, every process together
    processes: int = 64
    file_mb: int = 16
    tmp_mb: int = 64               # the sandbox's /tmp (RAM-backed) holds at most this much


@dataclass
class Outcome:
    returncode: int
    stdout: str                    # the last OUTPUT_TAIL_BYTES of it
    stderr: str
    reason: str | None             # why it was stopped: "wall-clock limit", "memory limit", …, or None
    stdout_bytes: int = 0          # how much was printed in all
    stderr_bytes: int = 0

    def output_note(self) -> str | None:
        """What was dropped from the output, in words, or None when all of it was kept."""
        dropped = [f"{name} {total:,} bytes (the first {total - len(kept.encode(errors='replace')):,} dropped)"
                   for name, total, kept in (("stdout", self.stdout_bytes, self.stdout),
                                             ("stderr", self.stderr_bytes, self.stderr))
                   if total > OUTPUT_TAIL_BYTES]
        return f"the program printed {', '.join(dropped)}; only the last {OUTPUT_TAIL_BYTES // 1024} KiB of each were kept" \
            if dropped else None


def available() -> bool:
    """Whether bubblewrap can start a sandbox here (and, as root, setpriv drop to nobody in it)."""
    if shutil.which("bwrap") is None or (os.geteuid() == 0 and shutil.which("setpriv") is None):
        return False
    probe = subprocess.run(["bwrap", *_namespaces(), "--ro-bind", "/", "/", "true"], capture_output=True,
                           env=clean_environment())
    return probe.returncode == 0


def clean_environment(**extra: str) -> dict[str, str]:
    """The only environment judged code gets: nothing of the server's (its secrets live there)."""
    return {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
            "GLOO_SOCKET_IFNAME": "lo", **extra}


def _python_roots() -> list[str]:
    """Directories the interpreter and its packages live in (outside /usr they must be bound)."""
    roots = {sys.prefix, sys.base_prefix, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    roots |= {p for p in sys.path if p and os.path.isdir(p) and "site-packages" in p}
    return sorted(r for r in roots if not r.startswith("/usr") and os.path.isdir(r))


def _namespaces() -> list[str]:
    """Every namespace; a user namespace only when not root (as root it would map nobody to root)."""
    shared = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    return shared if os.geteuid() == 0 else ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY), *shared]


def _as_nobody() -> list[str]:
    """As root: the command that drops to nobody, without capabilities, before the program starts."""
    if os.geteuid() != 0:
        return []
    return [shutil.which("setpriv"), "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]


def _hidden_files() -> list[Path]:
    """The problems' reference solutions and their bytecode: a learner must not import them."""
    return _references_in(REPO / "workers" / "problems")


def _references_in(problems: Path) -> list[Path]:
    return sorted(p for p in problems.rglob("reference.*") if p.is_file())


def _installed_references(visible: list[str]) -> list[Path]:
    """The reference solutions of a paralab installed where the sandbox can see it: a wheel (`pip install`,
    the Docker image) puts a copy of `workers` in site-packages, which is bound with the Python installation."""
    folders = {Path(entry) / "workers" / "problems" for entry in {*sys.path, *sysconfig.get_paths().values()} if entry}
    return [reference for folder in sorted(folders) if folder.is_dir() for reference in _references_in(folder)
            if any(reference.is_relative_to(root) for root in visible)]


def bwrap_command(argv: list[str], job_dir: Path, limits: Limits = Limits()) -> list[str]:
    capabilities = [] if os.geteuid() == 0 else ["--cap-drop", "ALL"]   # as root, setpriv drops them
    command = ["bwrap", *_namespaces(), "--die-with-parent", "--new-session", *capabilities, "--clearenv",
               "--hostname", "sandbox", "--proc", "/proc", "--dev", "/dev",
               "--perms", "1777", "--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp",
               "--ro-bind", str(job_dir), "/job", *_open_dir("/paralab"), "--ro-bind", str(REPO / "workers"), "/paralab/workers"]
    for hidden in _hidden_files():
        command += ["--ro-bind", "/dev/null", "/paralab/" + str(hidden.relative_to(REPO))]
    for name, value in clean_environment(PYTHONPATH="/paralab", PYTHONDONTWRITEBYTECODE="1").items():
        command += ["--setenv", name, value]
    command += ["--chdir", "/tmp"]
    for path in _SYSTEM_DIRS:
        if os.path.lexists(path):
            command += (["--symlink", os.readlink(path), path] if os.path.islink(path)
                        else ["--ro-bind", path, path])
    opened: set[Path] = set()
    bound: list[Path] = []
    for root in _python_roots():
        for parent in reversed(Path(root).parents[:-1]):        # /root is root's alone: open the way
            if parent not in opened and not any(parent.is_relative_to(b) for b in bound):
                opened.add(parent)
                command += _open_dir(str(parent))
        bound.append(Path(root))
        command += ["--ro-bind", root, root]
    for copy in _installed_references([*_SYSTEM_DIRS, *bound]):   # after the binds they lie in
        command += ["--ro-bind", "/dev/null", str(copy)]
    return command + _as_nobody() + argv


def _open_dir(path: str) -> list[str]:
    """A directory the unprivileged user may enter (bubblewrap would make it root's alone)."""
    return ["--perms", "0755", "--dir", path]


# ---- cgroups: processes and memory of the whole job ------------------------------------------------

@dataclass
class JobCgroups:
    pids: Path | None
    memory: Path | None

    def join(self) -> None:
        """Move the calling process in (before exec: no fork escapes)."""
        for cgroup in (self.pids, self.memory):
            if cgroup is not None:
                (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    def hit_process_limit(self) -> bool:
        return _counter(self.pids, "pids.events", "max") > 0

    def hit_memory_limit(self) -> bool:
        return _counter(self.memory, "memory.oom_control", "oom_kill") > 0

    def limit_hit(self, limits: Limits) -> str | None:
        """The job's limit the kernel has enforced (a fork refused, a process killed), or None."""
        if self.hit_process_limit():
            return f"process limit ({limits.processes} processes)"
        if self.hit_memory_limit():
            return f"memory limit ({limits.job_memory_mb} MiB)"
        return None

    def empty(self, timeout: float = 10) -> None:
        """Kill what the job's cgroup still holds and wait until it is gone. The job's processes die
        with its sandbox's PID namespace, but not at once (a loaded machine takes a while to tear down
        a process holding torch), and a job stopped must be gone when its caller is told so."""
        cgroup = self.pids or self.memory
        deadline = time.monotonic() + timeout
        while cgroup is not None and time.monotonic() < deadline:
            try:
                left = [int(pid) for pid in (cgroup / "cgroup.procs").read_text().split()]
            except OSError:
                return
            if not left:
                return
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        for cgroup in (self.pids, self.memory):
            if cgroup is not None:
                for _ in range(50):
                    try:
                        cgroup.rmdir()
                        break
                    except OSError:
                        time.sleep(0.02)


def _counter(cgroup: Path | None, file: str, key: str) -> int:
    try:
        for line in (cgroup / file).read_text().splitlines():
            name, value = line.split()
            if name == key:
                return int(value)
    except (OSError, ValueError, TypeError):
        pass
    return 0


def _make_cgroup(controller: str, settings: dict[str, str]) -> Path | None:
    """A cgroup v1 of this job's own under `controller`, where the machine lets us make one."""
    hierarchy = CGROUPS / controller
    if not (hierarchy / "cgroup.procs").exists():            # no such controller mounted here
        return None
    cgroup = hierarchy / "paralab" / f"job-{os.getpid()}-{time.monotonic_ns()}"
    try:
        cgroup.parent.mkdir(exist_ok=True)
        cgroup.mkdir()
        for file, value in settings.items():
            (cgroup / file).write_text(value)
        return cgroup
    except OSError:
        try:
            cgroup.rmdir()
        except OSError:
            pass
        return None


def job_cgroups(limits: Limits) -> JobCgroups:
    memory = str(limits.job_memory_mb << 20)
    cgroups = JobCgroups(_make_cgroup("pids", {"pids.max": str(limits.processes)}),
                         _make_cgroup("memory", {"memory.limit_in_bytes": memory}))
    try:                                  # with swap accounting: no swapping past the limit either
        (cgroups.memory / "memory.memsw.limit_in_bytes").write_text(memory)
    except (OSError, TypeError):
        pass
    return cgroups


def _limit_child(limits: Limits, cgroups: JobCgroups):
    def apply():
        cgroups.join()
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 2))   # SIGXCPU first: named
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if cgroups.pids is None:       # per user, not per job: only where no cgroup counts the job
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes,) * 2)
    return apply


# ---- running a job ------------------------------------------------------------------------------

def run(argv: list[str], files: dict[str, bytes], limits: Limits = Limits(),
        stop: threading.Event | None = None, pass_fds: tuple[int, ...] = ()) -> Outcome:
    """Run `argv` in a fresh sandbox where `files` appear read-only under /job; setting `stop` (from
    another thread) kills it at once, with the reason CANCELLED. `pass_fds` (the write ends of the
    caller's pipes) are inherited by the sandbox and closed here once it has started."""
    with tempfile.TemporaryDirectory(prefix="paralab-job-") as job:
        job_dir = Path(job)
        for name, data in files.items():
            (job_dir / name).write_bytes(data)
            os.chmod(job_dir / name, 0o644)
        os.chmod(job_dir, 0o755)
        cgroups = job_cgroups(limits)
        try:
            process = subprocess.Popen(bwrap_command(argv, job_dir, limits), stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=clean_environment(),
                                       preexec_fn=_limit_child(limits, cgroups), start_new_session=True,
                                       pass_fds=pass_fds)
        finally:
            for fd in pass_fds:
                os.close(fd)
        outcome = supervise(process, limits, stop, watch_memory=cgroups.memory is None, cgroups=cgroups)
        cgroups.empty()
        if outcome.reason != CANCELLED:
            outcome.reason = _reason(process.returncode, outcome.stdout + outcome.stderr, cgroups, limits) \
                or outcome.reason
        cgroups.remove()
        return outcome


def supervise(process: subprocess.Popen, limits: Limits, stop: threading.Event | None,
              watch_memory: bool = False, keep: int = OUTPUT_TAIL_BYTES, cgroups: JobCgroups | None = None) -> Outcome:
    """Collect the output of `process`, started in a session of its own, until it ends. It and what it
    started (its children, then its process group: `_stop`) are killed when it ends, when its wall
    clock runs out, when (`watch_memory`) its processes together hold more than the job's memory, when
    its `cgroups` count a limit hit (a rank killed for memory: the others would wait for it until the
    clock runs out), or as soon as `stop` is set (the sandbox's PID namespace goes with it). Only the
    last `keep` bytes of each stream are kept."""
    tails = {"stdout": Tail(keep), "stderr": Tail(keep)}
    readers = [threading.Thread(target=tails[name].read_all, args=(getattr(process, name),), daemon=True)
               for name in tails]
    for reader in readers:
        reader.start()
    try:
        reason = _wait(process, limits, stop, watch_memory, cgroups)
    finally:
        _stop(process)
    for reader in readers:
        reader.join(timeout=5)
    out, err = tails["stdout"], tails["stderr"]
    return Outcome(process.returncode, out.text(), err.text(), reason, out.total, err.total)


class Tail:
    """The end of a stream read as it comes: at most OUTPUT_TAIL_BYTES kept, every byte counted."""

    def __init__(self, keep: int = OUTPUT_TAIL_BYTES):
        self.keep, self.total, self.data = keep, 0, bytearray()

    def read_all(self, stream) -> None:
        while chunk := stream.read1(64 * 1024) if hasattr(stream, "read1") else stream.read(64 * 1024):
            self.total += len(chunk)
            self.data += chunk
            if len(self.data) > 2 * self.keep:
                del self.data[:-self.keep]

    def text(self) -> str:
        return bytes(self.data[-self.keep:]).decode(errors="replace")


def _wait(process: subprocess.Popen, limits: Limits, stop: threading.Event | None,
          watch_memory: bool, cgroups: JobCgroups | None) -> str | None:
    """Wait for the process itself (not the pipes: a left-over fork may hold them): None when it ends
    by itself, else why it must be stopped."""
    deadline = time.monotonic() + limits.wall_s
    next_watch = time.monotonic()
    while (left := deadline - time.monotonic()) > 0:
        if stop is not None and stop.is_set():
            return CANCELLED
        if time.monotonic() >= next_watch:
            next_watch = time.monotonic() + WATCHDOG_POLL_S
            if watch_memory and tree_memory(process.pid) > limits.job_memory_mb << 20:
                return f"memory limit ({limits.job_memory_mb} MiB)"
            if cgroups is not None and (hit := cgroups.limit_hit(limits)):
                return hit
        if _exited(process, min(left, STOP_POLL_S)):
            return None
    return f"wall-clock limit ({limits.wall_s:g} s)"


def tree_memory(root: int) -> int:
    """Bytes of memory held by `root` and all its descendants (orphans inside the sandbox are adopted
    by its init, itself a descendant), pages shared between them counted once (proportional set size)."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += _proportional_bytes(pid)
        todo += children.get(pid, [])
    return total


def _proportional_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError):
        pass
    return 0


def _stop(process: subprocess.Popen) -> None:
    """Kill `process` and what it started, a sandbox from the inside out: killing bwrap's child, the
    init of the sandbox's PID namespace, kills every process in the namespace, and the init ends only
    once they all have; bwrap, which reaps it, then exits. (Killed first, bwrap would leave its init
    to finish dying on its own, after the caller was told the job had stopped.) Then its process group,
    before this reaps `process`: until then its pid, the group's id, cannot be another process's."""
    if process.returncode is None and not _exited(process, 0):
        for child in _children(process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        _exited(process, STOP_WAIT_S)
    _kill_group(process.pid)
    process.wait()


def _exited(process: subprocess.Popen, timeout: float) -> bool:
    """Whether `process` has ended, waiting up to `timeout` seconds, without reaping it (as
    `Popen.wait` would: its pid could then be given to a new process)."""
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        try:
            if process.returncode is not None or os.waitid(
                    os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:      # reaped by someone else
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        delay = min(delay * 2, left, 0.05)   # as Popen.wait's own polling
        time.sleep(delay)


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:      # ended already, or a kernel that does not list children
        return []


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reason(code: int, output: str, cgroups: JobCgroups, limits: Limits) -> str | None:
    return cgroups.limit_hit(limits) or signalled(code, limits) or exhausted(output, limits)


def signalled(code: int, limits: Limits) -> str | None:
    """The limit a process's exit status (a signal, or a shell's 128 + signal) shows it ran into."""
    if code in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
        return f"CPU-time limit ({limits.cpu_s} s)"
    if code in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ):
        return f"file-size limit ({limits.file_mb} MiB)"
    return None


def exhausted(text: str, limits: Limits) -> str | None:
    """The limit a program's own error message shows it ran into, if any."""
    if "MemoryError" in text or "Cannot allocate memory" in text or "std::bad_alloc" in text:
        return f"memory limit ({limits.memory_mb} MiB)"
    if "Resource temporarily unavailable" in text or "BlockingIOError" in text:
        return f"process limit ({limits.processes} processes)"
    if "File too large" in text:
        return f"file-size limit ({limits.file_mb} MiB)"
    if "No space left on device" in text:
        return f"temporary-space limit ({limits.tmp_mb} MiB in /tmp)"
    return None
