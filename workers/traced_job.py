"""A rank of a job started outside the server — by `torchrun`, or any launcher that sets torchrun's
environment (RANK, WORLD_SIZE, GROUP_RANK, TORCHELASTIC_RUN_ID…) — traced into a paralab server.

`workers/job_hook/sitecustomize.py` calls `attach_from_environment()` as the rank's Python starts,
when PARALAB_SERVER names a server: the tracer is installed through its public API, its events go to
a `JobSender`, and at exit the rank says goodbye, saying on stderr how many events it dropped (if
any). The user's script is not changed, and nothing here can stop it.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.util
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

from workers.job_sender import MAX_SCRIPT_CHARS, JobSender, RankIdentity
from workers.protocol import Log
from workers.site_path import shown_path

ATTACHED = "PARALAB_TRACED_PID"     # set once a process is traced: its children (data loaders) are not


def identity_from_environment(env=os.environ) -> RankIdentity | None:
    """Who this rank is, from torchrun's variables; None when this process is not a rank."""
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return None
    restart = env.get("TORCHELASTIC_RESTART_COUNT", "0")
    job = env.get("PARALAB_JOB") or env.get("TORCHELASTIC_RUN_ID", "none")
    if job == "none":        # torchrun without a rendezvous id: the master's address names the job
        job = f"{env.get('MASTER_ADDR', '?')}:{env.get('MASTER_PORT', '?')}"
    return RankIdentity(job=f"{job}/{restart}", rank=int(env["RANK"]), world_size=int(env["WORLD_SIZE"]),
                        node=int(env.get("GROUP_RANK", "0")), host=env.get("PARALAB_HOSTNAME") or socket.gethostname())


def trace_this_rank() -> None:
    """What the hooks call as a Python process starts (workers/job_hook/sitecustomize.py, or the .pth
    file `paralab trace --install-hook` writes): trace it if it is a rank, never failing it."""
    try:
        attach_from_environment()
    except Exception as exc:
        _say(f"paralab: rank {os.environ.get('RANK')} is not traced: {type(exc).__name__}: {exc}")


def attach_from_environment(env=os.environ) -> JobSender | None:
    server = env.get("PARALAB_SERVER")
    identity = identity_from_environment(env)
    if not server or identity is None or env.get(ATTACHED):     # traced already (both hooks), or its parent was
        return None
    os.environ[ATTACHED] = str(os.getpid())
    return attach(server, identity, env.get("PARALAB_TOKEN"), announce=env.get("LOCAL_RANK", "0") == "0")


def attach(server: str, identity: RankIdentity, token: str | None = None, announce: bool = False) -> JobSender:
    """Trace this process's torch.distributed calls into `server` as `identity`'s rank: the sender
    starts now, the tracer is installed as soon as torch is imported (now, if it is already)."""
    def joined(sender: JobSender) -> None:
        if announce:
            _say(f"paralab: rank {identity.rank} (node {identity.node}) traced live at {sender.page}")

    sender = JobSender(server, identity, token, on_join=joined, script=main_script() if announce else None)
    atexit.register(_finish, sender, identity.rank)     # first registered: runs after the tracer settles
    _when_imported("torch", lambda: _install_tracer(sender, identity.rank))
    _report_uncaught(sender, identity.rank)
    _say_goodbye_when_stopped(sender, identity.rank)
    return sender


def main_script(argv: list[str] | None = None) -> dict | None:
    """The file this rank runs (`python train.py …`, as torchrun starts it), named as the tracer's sites
    name it, and its text: its page's Source panel shows it. None for `python -m module`, or a file
    that is not UTF-8 text or is longer than its join may carry."""
    argv = sys.argv if argv is None else argv
    if not argv or not argv[0].endswith(".py"):
        return None
    try:
        text = Path(argv[0]).read_bytes()[:MAX_SCRIPT_CHARS + 1].decode()
    except (OSError, UnicodeDecodeError):
        return None
    if len(json.dumps(text)) > MAX_SCRIPT_CHARS:
        return None
    return {"path": shown_path(argv[0]), "text": text}


def _install_tracer(sender: JobSender, rank: int) -> None:
    import torch.distributed as dist

    from workers.tracer import Tracer

    def emit(message: dict) -> None:
        if sender.backend is None and dist.is_initialized():
            sender.backend = str(dist.get_backend())
        sender.put(message)

    # the dispatch level sees DDP, FSDP2, DTensor…; PARALAB_DISPATCH=off keeps the dist.* wrappers alone
    tracer = Tracer(emit, rank, time.monotonic)
    tracer.install(dispatch=os.environ.get("PARALAB_DISPATCH", "on") != "off")
    atexit.register(tracer.settle)     # the ends gloo's threads still owe are sent before the sender closes


def _when_imported(name: str, then) -> None:
    """Call `then()` once module `name` is imported: at once if it is, else right after its import.
    A .pth hook runs before the rest of site-packages is on sys.path (a venv's system packages): torch
    cannot be imported there yet. Right after, before the program's next line, it can — and a
    `from torch.distributed import all_reduce` then takes the traced function."""
    if name in sys.modules:
        _safely(then)
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


def _safely(then) -> None:
    try:
        then()
    except Exception as exc:     # tracing must never stop the job
        _say(f"paralab: rank {os.environ.get('RANK')} is not traced: {type(exc).__name__}: {exc}")


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds module `name` as the other finders would, and runs `then()` after it has executed."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module, then = spec.loader.exec_module, self.then

        def exec_then(module):
            exec_module(module)
            sys.modules[fullname] = module      # as the import system will: what `then` imports finds it
            _safely(then)

        spec.loader.exec_module = exec_then
        return spec


def _report_uncaught(sender: JobSender, rank: int) -> None:
    """An exception that ends the rank goes to the server too, with its line in the user's file."""
    previous = sys.excepthook

    def hook(kind, exc, tb):
        frames = traceback.extract_tb(tb)
        site = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None
        sender.put(Log(rank=rank, t=time.monotonic(), level="error", message=f"{kind.__name__}: {exc}", site=site,
                       traceback="".join(traceback.format_exception(kind, exc, tb))[-8000:]).to_dict())
        previous(kind, exc, tb)

    sys.excepthook = hook


def _say_goodbye_when_stopped(sender: JobSender, rank: int) -> None:
    """torchrun stops the other ranks with SIGTERM when one fails: say goodbye first (within a second),
    then die of the signal as before. Only where nobody else handles SIGTERM."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        return

    def stopped(signum, frame):
        sender.stopped = signal.Signals(signum).name
        _finish(sender, rank, deadline_s=1.0)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, stopped)


def _say(message: str) -> None:
    """A line on stderr in one write: the ranks share their stderr, and `print` writes the newline
    apart, so under PYTHONUNBUFFERED two ranks' lines could run together."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _finish(sender: JobSender, rank: int, deadline_s: float = 5.0) -> None:
    if sender.closed:
        return
    sender.close(deadline_s)
    if sender.dropped:
        why = f": {sender.last_error}" if sender.last_error else ""
        _say(f"paralab: rank {rank} dropped {sender.dropped} of {sender.sent + sender.dropped} events{why}")
