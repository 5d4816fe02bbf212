"""The server as a container's pid 1 (the Docker image's command, or a Kubernetes pod's: neither adds an
init by default). Pid 1 inherits every process orphaned in the container — a judged job's sandbox init
outlives the bwrap that started it, a killed run's ranks outlive their supervisor — and must reap them,
or they stay zombies until the container's process limit stops every new run. So the server, finding
itself pid 1, forks: the child serves; pid 1 only reaps whatever ends and passes signals on to the
server, and exits with it (as tini does)."""

from __future__ import annotations

import contextlib
import os
import signal

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def serve_as_init_if_pid_1() -> None:
    """Return at once in the process that is to serve; as pid 1, never return (see the module's note)."""
    if os.getpid() != 1:
        return
    server = os.fork()
    if server == 0:
        return

    def pass_on(received, frame):
        with contextlib.suppress(ProcessLookupError):   # the server ended meanwhile: reaped next
            os.kill(server, received)

    for number in FORWARDED:
        signal.signal(number, pass_on)
    os._exit(_reap_until(server))


def _reap_until(server: int) -> int:
    """Reap every child, adopted or not, until the server ends; its exit status (128 + N for signal N)."""
    while True:
        pid, status = os.wait()
        if pid == server:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code
