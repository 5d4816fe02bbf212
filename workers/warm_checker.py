"""The judge's checker, kept warm: one process outside the sandbox imports torch once, then forks a
child for each judgment's check. A checker started cold (`python -m workers.judge_checker PROBLEM`)
spent about 2 CPU-s of a judgment's 8 importing torch; a fork costs a few milliseconds. No checker is forked for a submission refused or stopped before its
checks. A problem's verify.py is imported by the server when it is first checked, so later checks of
it start warm too.

It is the same checker: it never loads learner code (the child reads the ranks' reports, JSON, on
its stdin and prints every check, `workers/judge_checker.py`'s `main`), it starts with the clean
environment, outside the sandbox. The judge asks over a Unix socket, one request at a time:

  "check PROBLEM" with three fds (SCM_RIGHTS): the child's stdin, stdout, stderr → its pid
  "kill PID" → the child killed if it still runs → "done"

The server reaps its children only while it answers a request, so a pid it is asked to kill is its
own child (running or not yet reaped), never another process that took a reused pid. It ends when
the judge's process does (its socket closes).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading

from workers import sandbox

ANSWER_BYTES = 64
ANSWER_S = 120.0                   # a first request waits for the server's imports (seconds on a loaded machine)


class WarmChecker:
    """The judge's side: starts the server when first needed (again if it died), one request at a time."""

    def __init__(self):
        self._lock = threading.Lock()
        self._server: subprocess.Popen | None = None
        self._socket: socket.socket | None = None

    def start(self) -> None:
        """Start the server now if it is not running (its imports then overlap the ranks' run)."""
        with self._lock:
            self._ensure_server()

    def check(self, problem_id: str) -> Check:
        """A new check of `problem_id`, waiting for the reports on its stdin."""
        return Check(self, problem_id)

    def request(self, line: str, fds: tuple[int, ...] = ()) -> str:
        with self._lock:
            for _ in range(2):                   # a server that died is started again, once
                self._ensure_server()
                try:
                    socket.send_fds(self._socket, [line.encode()], list(fds))
                    answer = self._socket.recv(ANSWER_BYTES)
                except OSError:
                    answer = b""
                if answer:
                    return answer.decode()
                self._stop_server()
        raise RuntimeError("the warm checker does not answer")

    def _ensure_server(self) -> None:
        if self._server is not None and self._server.poll() is None:
            return
        ours, theirs = socket.socketpair()
        with theirs:
            self._server = subprocess.Popen(
                [sys.executable, "-m", "workers.warm_checker"], stdin=theirs.fileno(), stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, cwd=str(sandbox.REPO), start_new_session=True,
                env=sandbox.clean_environment(PYTHONPATH=str(sandbox.REPO)))
        ours.settimeout(ANSWER_S)
        self._socket = ours

    def _stop_server(self) -> None:
        if self._socket is not None:
            self._socket.close()
        if self._server is not None and self._server.poll() is None:
            self._server.kill()
            self._server.wait()
        self._server = self._socket = None


class Check:
    """One check, forked by the server: write the reports to `stdin`, read the checks from `stdout`
    (it has ended when `stdout` closes)."""

    def __init__(self, checker: WarmChecker, problem_id: str):
        (stdin, self._stdin), (self._stdout, stdout), (self._stderr, stderr) = os.pipe(), os.pipe(), os.pipe()
        self._checker = checker
        try:
            answer = checker.request(f"check {problem_id}", (stdin, stdout, stderr))
            if not answer.isdigit():
                raise RuntimeError(f"the warm checker answered {answer!r}")
            self.pid = int(answer)
        except RuntimeError:
            for fd in (self._stdin, self._stdout, self._stderr):
                os.close(fd)
            raise
        finally:
            for fd in (stdin, stdout, stderr):
                os.close(fd)

    def run(self, data: bytes, wall_s: float, stop: threading.Event | None, keep: int) -> sandbox.Outcome:
        """Feed `data`, collect the output (the last `keep` bytes of each stream) until the check ends;
        killed when `wall_s` runs out or `stop` is set (the reason then says so)."""
        tails = {"stdout": sandbox.Tail(keep), "stderr": sandbox.Tail(keep)}
        streams = {"stdout": os.fdopen(self._stdout, "rb"), "stderr": os.fdopen(self._stderr, "rb")}
        readers = {name: threading.Thread(target=tails[name].read_all, args=(streams[name],), daemon=True)
                   for name in tails}
        for reader in readers.values():
            reader.start()
        threading.Thread(target=_feed, args=(self._stdin, data), daemon=True).start()
        reason = _wait(readers["stdout"], wall_s, stop)
        if reason:
            self._checker.request(f"kill {self.pid}")
        for reader in readers.values():
            reader.join(timeout=5)
        for stream in streams.values():
            stream.close()
        out, err = tails["stdout"], tails["stderr"]
        return sandbox.Outcome(0 if reason is None else -signal.SIGKILL, out.text(), err.text(), reason,
                               out.total, err.total)


def _wait(reader: threading.Thread, wall_s: float, stop: threading.Event | None) -> str | None:
    deadline = wall_s
    while reader.is_alive():
        if stop is not None and stop.is_set():
            return sandbox.CANCELLED
        if deadline <= 0:
            return f"wall-clock limit ({wall_s:g} s)"
        reader.join(sandbox.STOP_POLL_S)
        deadline -= sandbox.STOP_POLL_S
    return None


def _feed(fd: int, data: bytes) -> None:
    try:
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(data)
    except OSError:                  # the check ended (or was killed) before reading it all
        pass


# ---- the server ---------------------------------------------------------------------------------

def serve(channel: socket.socket) -> None:
    import torch

    from workers import judge_checker  # noqa: F401  (what each child runs)
    from workers.problems import PROBLEMS
    torch.set_num_threads(1)                     # before any fork: no thread pool to inherit
    children: set[int] = set()
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(channel, 1024, 3)
        except OSError:
            return
        if not message:                          # the judge's process has ended
            return
        children -= _reaped()
        command, _, argument = message.decode(errors="replace").partition(" ")
        answer = "refused"
        if command == "check" and argument in PROBLEMS and len(fds) == 3 and _imported_verify(argument):
            pid = os.fork()
            if pid == 0:
                _run_check(argument, fds, channel)
            children.add(pid)
            answer = str(pid)
        elif command == "kill" and argument.isdigit() and int(argument) in children:
            os.kill(int(argument), signal.SIGKILL)
            answer = "done"
        for fd in fds:
            os.close(fd)
        channel.sendall(answer.encode())


def _imported_verify(problem_id: str) -> bool:
    """The problem's verify.py imported here, once, by its first check (later ones fork it warm)."""
    import importlib
    try:
        importlib.import_module(f"workers.problems.{problem_id}.verify")
        return True
    except Exception:                            # a broken verify.py: that check is refused, not the server
        return False


def _reaped() -> set[int]:
    ended = set()
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if not pid:
            return ended
        ended.add(pid)


def _run_check(problem_id: str, fds: list[int], channel: socket.socket) -> None:
    """In the forked child: the check's pipes become its stdin, stdout and stderr; never returns."""
    from workers import judge_checker
    channel.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    code = 0
    try:
        judge_checker.main(problem_id)
    except BaseException:                        # noqa: B036 — whatever happens, this child ends here
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    serve(socket.socket(fileno=0))
