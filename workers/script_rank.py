"""One rank of a user's own script: run unchanged, as `torchrun` would run it, and traced.

The rank gets the environment torchrun gives (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`,
`MASTER_ADDR`, `MASTER_PORT`, …), so `dist.init_process_group("gloo")` with no other argument joins
this run's ranks; a script that never calls it runs too. The script runs as `__main__` with
`sys.argv = [its name, *args]`, in the run's own scratch folder. It is compiled under the path
`REPO_ROOT/<its name>`, so the tracer's `site` and a traceback's frames name it `<its name>:<line>`,
which is the path the page shows its source under; its lines are put in `linecache` (no such file
exists), so a traceback quotes them.
"""

from __future__ import annotations

import linecache
import os
import socket
import sys
import time
import traceback
import types
from pathlib import Path

import torch
import torch.distributed as dist
# What scripts use to parallelise: imported with this module, in the warm launcher at the first script
# run (workers/warm.py), not again in each rank of each run.
import torch.distributed.fsdp  # noqa: F401
import torch.distributed.pipelining  # noqa: F401
import torch.distributed.tensor.parallel  # noqa: F401

from workers.channel import EventChannel
from workers.gate import Gate
from workers.launch_request import LaunchRequest
from workers.lessons import LESSONS
from workers.protocol import Log, Rank
from workers.tracer import Tracer
import workers.dispatch_trace  # noqa: F401  Tracer.install's: in the warm process, not in each traced rank

REPO_ROOT = Path(__file__).resolve().parent.parent
MASTER_PORT_KEY = "script/master_port"


def script_path(filename: str) -> str:
    """Where the script's code says it comes from: the tracer shows it relative to the repository."""
    return str(REPO_ROOT / filename)


def run_rank(request: LaunchRequest, rank: int, store_path: str) -> int:
    """Run the script on this rank to the end; returns the process exit status (the script's own)."""
    torch.set_num_threads(1)
    channel = EventChannel(request.events_address, request.run_id, request.token, rank)
    clock = lambda: time.monotonic() - request.t0  # noqa: E731  one monotonic clock per host
    tracer = Tracer(channel.send, rank, clock, before_call=Gate(channel, rank, clock, request.step))
    params = LESSONS[request.lesson].validate(request.params, request.world_size)
    path = script_path(params.filename)
    status = 0
    try:
        store = dist.FileStore(store_path, request.world_size)   # the run's own store, not the script's
        os.environ.update(torchrun_environment(store, rank, request.world_size))
        os.chdir(os.path.dirname(store_path))
        if request.trace:
            tracer.install()
        status = run_script(params.source, path, params.args)
        if status == 0:
            channel.send(Rank(rank=rank, t=clock(), status="finished").to_dict())
        else:
            channel.send(Log(level="error", rank=rank, t=clock(), message=f"SystemExit: the script exited with "
                             f"status {status}", site=None).to_dict())
        tracer.uninstall()
        if status == 0:
            _leave_together(store, rank, request.world_size)
    except BaseException as exc:   # report anything, with the line of the user's file it came from
        channel.send(error_event(rank, clock(), exc, path))
        status = 1
    finally:
        sys.stdout.flush()          # the rank ends with os._exit: what is buffered would be lost
        sys.stderr.flush()
        channel.close()
    return status


def torchrun_environment(store, rank: int, world_size: int) -> dict[str, str]:
    """torchrun's variables for one host: rank 0 picks a free port for the script's TCPStore and
    tells the others through the run's store."""
    if rank == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        store.set(MASTER_PORT_KEY, str(port))
    port = int(store.get(MASTER_PORT_KEY))
    return {"RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world_size), "GROUP_RANK": "0", "ROLE_RANK": str(rank),
            "ROLE_WORLD_SIZE": str(world_size), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}


def run_script(source: str, path: str, args: list[str]) -> int:
    """Run `source` as `python path args…` would, in this process; its exit status (0, or sys.exit's)."""
    lines = source.splitlines(keepends=True)
    linecache.cache[path] = (len(source), None, lines, path)      # mtime None: never checked against a file
    code = compile(source, path, "exec")
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    sys.argv = [os.path.basename(path), *args]
    sys.path[0] = os.getcwd()
    try:
        exec(code, main.__dict__)
    except SystemExit as stop:
        return exit_status(stop.code)
    return 0


def exit_status(code) -> int:
    """sys.exit's argument as a process's status: None 0, an int itself, anything else (a message) 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _leave_together(store, rank: int, world_size: int) -> None:
    """As a lesson's ranks do (workers/rank.py): a rank that finishes early waits on the run's store
    rather than closing its connections under the ranks still at work; then its process group, if
    the script left one, is taken down."""
    store.set(f"finished/{rank}", "1")
    store.wait([f"finished/{r}" for r in range(world_size)])
    if dist.is_initialized():
        dist.destroy_process_group()


def _from_the_script(tb, path: str):
    """The traceback from the script's first frame on (paralab's own frames above it say nothing to
    the user); the whole of it when the error came before the script ran."""
    first = tb
    while first is not None and first.tb_frame.f_code.co_filename != path:
        first = first.tb_next
    return first or tb


def error_event(rank: int, t: float, exc: BaseException, path: str) -> dict:
    """A `log` error whose `site` is the innermost line of the user's file the exception came through."""
    frames = traceback.extract_tb(exc.__traceback__)
    in_script = [f for f in frames if f.filename == path]
    site = None
    if in_script:
        site = f"{os.path.basename(path)}:{in_script[-1].lineno}"
    shown = "".join(traceback.format_exception(type(exc), exc, _from_the_script(exc.__traceback__, path)))
    shown = shown.replace(str(REPO_ROOT) + "/", "")
    return Log(level="error", rank=rank, t=t, message=f"{type(exc).__name__}: {exc}"[:2000], site=site,
               traceback=shown[-8000:]).to_dict()
