"""One Ray node's warm launcher: a long-lived Ray actor (`app/cluster.py` makes one per node) that
holds the node's own `python -m workers.launcher` — torch and the lessons imported once — and has it
fork the ranks the server placed on this node, exactly as the embedded default does on one machine
(`workers/supervisor.py`). The actor itself never imports torch: the ranks are forked from the
launcher, never from a Ray worker (whose gRPC threads must not be forked).

Torch-free and Ray-free: `app/cluster.py` wraps `NodeLauncher` with `ray.remote`, so this module
imports on any node that has paralab, with or without Ray.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time


class NodeLauncher:
    """What the server asks of one node: start (once), launch a run's ranks here, stop or look at a run's
    supervisor here, a free port for the rank-0 store, this node's clock."""

    def __init__(self, repo_root: str, node_ip: str):
        self.node_ip = node_ip
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [repo_root, os.environ.get("PYTHONPATH")])),
               "GLOO_SOCKET_IFNAME": _interface_of(node_ip)}
        env.pop("PARALAB_PARENT_PID", None)
        self._proc = subprocess.Popen([sys.executable, "-m", "workers.launcher"], cwd=repo_root, env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._lock = threading.Lock()
        self._next_id = 0
        self.info = self._reply(lambda reply: "ready" in reply)

    def ready(self) -> dict:
        """The launcher's start-up reply (torch's version, GPUs), once torch and the lessons are loaded."""
        return {**self.info, "node_ip": self.node_ip, "hostname": socket.gethostname(), "pid": self._proc.pid}

    def clock(self) -> float:
        """This node's monotonic clock: the server puts the node's events on its own clock with it."""
        return time.monotonic()

    def free_port(self) -> int:
        """A port free on this node now, for the run's TCPStore (rank 0 listens on it)."""
        with socket.socket() as sock:
            sock.bind((self.node_ip, 0))
            return sock.getsockname()[1]

    def launch(self, request: dict) -> int:
        """Fork the supervisor of this node's ranks of a run (request["ranks"]); its pid = its process group."""
        with self._lock:
            self._next_id += 1
            request_id = self._next_id
            self._proc.stdin.write(json.dumps({"id": request_id, "launch": request}) + "\n")
            self._proc.stdin.flush()
            reply = self._reply(lambda reply: reply.get("id") == request_id)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["pid"]

    def kill(self, pid: int) -> None:
        """Stop a run's ranks on this node: its supervisor's whole process group."""
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def alive(self, pids: list[int]) -> list[int]:
        """Which of these supervisors still run on this node."""
        living = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                living.append(pid)
            except ProcessLookupError:
                pass
            except PermissionError:
                living.append(pid)
        return living

    def _reply(self, wanted) -> dict:
        while True:
            line = self._proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the warm launcher on {self.node_ip} exited (status {self._proc.wait()})")
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            if isinstance(reply, dict) and wanted(reply):
                return reply


def _interface_of(ip: str) -> str:
    """The network interface that holds `ip` (gloo's ranks talk over it); loopback when none does."""
    try:
        import psutil       # Ray depends on it
        for name, addresses in psutil.net_if_addrs().items():
            if any(address.address == ip for address in addresses):
                return name
    except ImportError:
        pass
    return "lo" if sys.platform.startswith("linux") else "lo0"


def judge_on_node(problem: str, code: str, allow_unsandboxed: bool) -> dict:
    """A submission judged on the Ray node this task was placed on, in that node's bubblewrap sandbox
    (workers/judge.py, as on the server's machine). Cancelled, the task's process is killed, and the
    sandbox dies with it (bwrap --die-with-parent)."""
    from dataclasses import asdict

    from workers.judge import judge

    return {**asdict(judge(problem, code, allow_unsandboxed=allow_unsandboxed)), "node_id": _node_id()}


def _node_id() -> str | None:
    try:
        import ray
        return ray.get_runtime_context().get_node_id()
    except Exception:       # outside Ray (a test calling it directly)
        return None
