"""A real one-rank gloo world (FileStore in tmp_path) and a tracer installed on it, torn down after."""

from __future__ import annotations

import os
import time

import pytest

os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")

import torch.distributed as dist  # noqa: E402

from tests.workers.helpers import on_the_wire  # noqa: E402
from workers import comm  # noqa: E402
from workers.tracer import Tracer  # noqa: E402


class Emitted(list):
    """Every message the tracer sent, as it went on the wire (encoded then decoded, so a later change
    to a dict already sent does not show): events, and tensor blobs (`{"blob": id, ...}`)."""

    @property
    def events(self) -> list[dict]:
        return [m for m in self if "blob" not in m]

    @property
    def blobs(self) -> dict[str, dict]:
        return {m["blob"]: m for m in self if "blob" in m}


@pytest.fixture
def world(tmp_path):
    """A single-process gloo world, destroyed after the test."""
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    yield dist.group.WORLD
    dist.destroy_process_group()


@pytest.fixture
def traced(world):
    """(tracer, emitted): a tracer installed on the world, wired to `workers.comm`; uninstalled after."""
    emitted = Emitted()
    t0 = time.monotonic()
    tracer = Tracer(lambda m: emitted.append(on_the_wire(m)), 0, lambda: time.monotonic() - t0)
    tracer.install()
    comm.use_tracer(tracer)
    yield tracer, emitted
    tracer.uninstall()
    comm.use_tracer(None)
