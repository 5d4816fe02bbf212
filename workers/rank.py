"""One rank's life: connect to the server, join the process group, run the lesson traced, report.

Runs in a process forked (or taken warm) by the launcher; torch is already imported there.
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist

from workers import comm
from workers.channel import EventChannel
from workers.gate import Gate
from workers.lab import Lab
from workers.launch_request import LaunchRequest
from workers.lessons import LESSONS
from workers.protocol import Log, Rank
from workers.site_path import shown_path
from workers.tracer import Tracer
import workers.dispatch_trace  # noqa: F401  Tracer.install's (it imports DTensor): in the warm process, not in each traced rank

TORCH_TIMEOUT_MARGIN_S = 5.0   # torch's own timeouts end this long after the run's wall-clock limit


def _device(backend: str, rank: int) -> torch.device:
    if backend == "nccl":
        index = rank % torch.cuda.device_count()
        torch.cuda.set_device(index)
        return torch.device("cuda", index)
    return torch.device("cpu")


def run_rank(request: LaunchRequest, rank: int, store_path: str) -> int:
    """Run one rank to the end; returns the process exit status."""
    torch.set_num_threads(1)
    runner = LESSONS[request.lesson].rank_runner if request.lesson in LESSONS else None
    if runner:
        return importlib.import_module(runner).run_rank(request, rank, store_path)
    channel = EventChannel(request.events_address, request.run_id, request.token, rank)
    clock = lambda: time.monotonic() - request.t0  # noqa: E731  one monotonic clock per host
    tracer = Tracer(channel.send, rank, clock, before_call=Gate(channel, rank, clock, request.step))
    status = 0
    try:
        lesson = LESSONS[request.lesson]
        params = lesson.validate(request.params, request.world_size)
        program = importlib.import_module(lesson.program_module)
        device = _device(request.backend, rank)
        store = rendezvous_store(request, rank, store_path)
        dist.init_process_group(request.backend, store=store, rank=rank, world_size=request.world_size,
                                timeout=_outliving_the_limit(request))
        if request.trace:
            tracer.install()
            comm.use_tracer(tracer)
        program.run(Lab(tracer, rank, request.world_size, device, host=request.node or None), params)
        channel.send(Rank(rank=rank, t=clock(), status="finished").to_dict())
        tracer.uninstall()
        _wait_for_everyone(store, rank, request.world_size)
        dist.destroy_process_group()
        if request.store:
            _store_host_leaves_last(store, rank, request.world_size)
    except BaseException as exc:   # report anything, even SystemExit, with where it happened
        channel.send(_error_event(rank, clock(), exc))
        status = 1
    finally:
        channel.close()
    return status


def rendezvous_store(request: LaunchRequest, rank: int, store_path: str):
    """Where the ranks meet: a FileStore in the run's directory on one machine; on a cluster, torch's
    TCPStore served by rank 0 on its host (request.store), which every other rank connects to."""
    if not request.store:
        return dist.FileStore(store_path, request.world_size)
    host, port = request.store.rsplit(":", 1)
    return dist.TCPStore(host, int(port), request.world_size, is_master=rank == 0,
                         timeout=_outliving_the_limit(request), wait_for_workers=False)


def _outliving_the_limit(request: LaunchRequest) -> timedelta:
    """torch's own timeout for a collective or the store: past the run's wall-clock limit, so that the
    supervisor's limit ends a stuck run (a "timeout") before a rank's own timeout does (equal, a loaded
    machine could let a waiting rank raise first: a "crash" of a run that had simply run out of time)."""
    return timedelta(seconds=max(request.time_limit_s, 1) + TORCH_TIMEOUT_MARGIN_S)


def _store_host_leaves_last(store, rank: int, world_size: int) -> None:
    """Rank 0 serves the TCPStore: it exits only once every rank is done with it."""
    if rank != 0:
        store.set(f"left/{rank}", "1")
    else:
        store.wait([f"left/{r}" for r in range(1, world_size)])


def _wait_for_everyone(store, rank: int, world_size: int) -> None:
    """Leave together. A rank that finishes early waits on the store, not in gloo: if it closed its
    connections, the ranks still working would fail with "connection reset" instead of showing
    where they really are (e.g. stuck in a collective this rank skipped)."""
    store.set(f"finished/{rank}", "1")
    store.wait([f"finished/{r}" for r in range(world_size)])


def _error_event(rank: int, t: float, exc: BaseException) -> dict:
    frames = traceback.extract_tb(exc.__traceback__)
    lesson_frames = [f for f in frames if "/workers/lessons/" in f.filename] or frames
    site = None
    if lesson_frames:
        last = lesson_frames[-1]
        site = f"{shown_path(last.filename)}:{last.lineno}"
    return Log(level="error", rank=rank, t=t, message=f"{type(exc).__name__}: {exc}", site=site,
               traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-8000:]).to_dict()


if __name__ == "__main__":  # pragma: no cover - debugging aid: python -m workers.rank REQUEST_JSON RANK STORE
    import json
    sys.exit(run_rank(LaunchRequest.from_json(json.loads(sys.argv[1])), int(sys.argv[2]), sys.argv[3]))
