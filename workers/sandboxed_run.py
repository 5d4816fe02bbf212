"""A run of a hosted-lab user's own program, inside the judge's bubblewrap sandbox (workers/sandbox.py).

In the hosted lab a user's script is untrusted code: its ranks must not run as the server. So the
run's supervisor (forked by the warm launcher as for any run) does not fork the ranks itself: it
starts `python -m workers.sandboxed_run REQUEST` in a sandbox, where an ordinary supervisor forks
them (fresh interpreters there, so a sandboxed run pays torch's import once). The sandbox has no
network but its own loopback, so the ranks reach the server's event port through a relay: a Unix
socket in the job's folder (seen read-only as /job inside), each connection to it carried both ways
to the event port by the supervisor outside. Everything else — events, step-mode gates, each rank's
output, the supervisor's report — goes as in any run. The sandbox's limits (memory, processes, CPU,
files) hold for the whole run; its wall clock is the run's. Cancelling the run kills the supervisor
outside; bubblewrap dies with it (--die-with-parent), and its PID namespace with every rank.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path

from workers import sandbox
from workers.launch_request import LaunchRequest

SOCKET_NAME = "events.sock"
INSIDE_ADDRESS = f"unix:/job/{SOCKET_NAME}"


def supervise_sandboxed(request: LaunchRequest) -> None:
    """Runs in the run's supervisor (outside the sandbox); never returns."""
    job = Path(tempfile.mkdtemp(prefix=f"paralab-sandbox-{request.run_id}-"))
    try:
        os.chmod(job, 0o755)
        relay = _relay(job / SOCKET_NAME, request.events_address)
        inner = dataclasses.replace(request, events_address=INSIDE_ADDRESS, sandboxed=False)
        limits = sandbox.Limits(wall_s=request.time_limit_s + 5.0)      # the ranks' own limit comes first
        argv = [sys.executable, "-m", "workers.sandboxed_run", json.dumps(inner.to_json())]
        outcome = _run(argv, job, limits)
        if outcome.reason:
            print(f"paralab sandbox: the run was stopped: {outcome.reason}", file=sys.stderr)
        relay.close()
    finally:
        shutil.rmtree(job, ignore_errors=True)
        os._exit(0)


def _run(argv: list[str], job: Path, limits: sandbox.Limits) -> sandbox.Outcome:
    """As sandbox.run, with this job folder (the relay's socket is in it)."""
    import subprocess
    cgroups = sandbox.job_cgroups(limits)
    try:
        process = subprocess.Popen(sandbox.bwrap_command(argv, job, limits), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=sandbox.clean_environment(),
                                   preexec_fn=sandbox._limit_child(limits, cgroups), start_new_session=True)
        return sandbox.supervise(process, limits, None, watch_memory=cgroups.memory is None)
    finally:
        cgroups.remove()


def _relay(path: Path, events_address: str) -> socket.socket:
    """A Unix socket at `path` anyone in the sandbox may connect to; each connection is joined to a
    new connection to the server's event port, bytes carried both ways until either side closes."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o777)             # the sandbox's ranks run as nobody
    listener.listen(64)
    host, port = events_address.rsplit(":", 1)

    def accept() -> None:
        while True:
            try:
                inside, _ = listener.accept()
            except OSError:
                return
            outside = socket.create_connection((host, int(port)))
            outside.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for source, sink in ((inside, outside), (outside, inside)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main() -> None:
    """Inside the sandbox: an ordinary supervisor forks the ranks (torch is imported here, once)."""
    from workers import supervisor, warm
    warm.torch.set_num_threads(1)
    supervisor.supervise(LaunchRequest.from_json(json.loads(sys.argv[1])))


if __name__ == "__main__":
    main()
