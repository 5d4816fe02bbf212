"""What the live-server tests share: reading a run's events, the websocket, and watching the
processes a run forks (read from /proc, so that a test can say none is left behind)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import httpx
from websockets.sync.client import connect

from tests import web

FINAL = ("done", "failed", "cancelled")


# How long a test waits for the server's answer: httpx's 5 s is too short for a big run's log while the
# server's two cores also run ranks (and, at times, another suite).
ANSWER_S = 60


def events(server, run_id: str, since: int = 0) -> list[dict]:
    response = web.get(f"{server.url}/api/runs/{run_id}/events", params={"since": since}, timeout=ANSWER_S)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


def run_count(server) -> int:
    return len(web.get(f"{server.url}/api/runs", params={"limit": 1_000_000}, timeout=ANSWER_S).json())


def is_final(event: dict) -> bool:
    return event.get("kind") == "run" and event.get("status") in FINAL


def ws_receive(ws, timeout: float = 10) -> dict:
    return json.loads(ws.recv(timeout=timeout))


def ws_until_final(ws, timeout: float = 30) -> list[dict]:
    """Every message up to and including the run's final `run` event."""
    got, deadline = [], time.monotonic() + timeout
    while True:
        got.append(ws_receive(ws, max(deadline - time.monotonic(), 0.01)))
        if is_final(got[-1]):
            return got


def ws_connect(server, run_id: str, since: int | None = None):
    query = "" if since is None else f"?since={since}"
    return connect(f"{server.ws_url}/ws/runs/{run_id}{query}", open_timeout=10, close_timeout=2,
                   max_queue=None)   # unbounded: closing with unread events must not wait on flow control


def wait_for(predicate, timeout: float = 30, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"waited {timeout} s for {predicate}")


# ---- processes ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Proc:
    pid: int
    state: str
    ppid: int
    session: int
    start: int            # start time in clock ticks since boot: tells a reused pid apart

    @property
    def living(self) -> bool:
        return self.state not in "ZX"      # a zombie has ended; only its exit status is left


def _proc(pid: int) -> Proc | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return Proc(pid, fields[0], int(fields[1]), int(fields[3]), int(fields[19]))


def processes() -> dict[int, Proc]:
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (proc := _proc(int(name))) is not None:
            found[proc.pid] = proc
    return found


def descendants(root: int, procs: dict[int, Proc]) -> list[Proc]:
    children: dict[int, list[Proc]] = {}
    for proc in procs.values():
        children.setdefault(proc.ppid, []).append(proc)
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child.pid)
    return out


def tree(root: int) -> list[Proc]:
    """`root`'s descendants, read from each process's own list of children: a few files, not the
    whole of /proc, so a watcher polling it sees a process that lives only a few milliseconds."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                children = Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if (proc := _proc(child)) is not None:
                    out.append(proc)
                    todo.append(child)
    return out


def launcher_pid(server, parent: int | None = None) -> int:
    """The server's warm launcher: its child running `python -m workers.launcher` (`parent`: the server's
    pid, when `server.proc` is a command the server runs under)."""
    parent = server.proc.pid if parent is None else parent
    for proc in descendants(parent, processes()):
        try:
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        except OSError:
            continue
        if proc.ppid == parent and b"workers.launcher" in cmdline:
            return proc.pid
    raise LookupError("the server has no launcher process")


class RunProcesses:
    """Records every process the launcher starts while the block runs (a run's supervisor and its
    ranks), polling /proc every few milliseconds; `left_behind()` says which still live after."""

    def __init__(self, server):
        self.launcher = launcher_pid(server)
        self.launcher_session = _proc(self.launcher).session
        self._before = {(p.pid, p.start) for p in tree(self.launcher)}
        self.seen: dict[tuple[int, int], Proc] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> "RunProcesses":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.is_set():
            for proc in tree(self.launcher):
                if (proc.pid, proc.start) not in self._before:   # as last seen: a supervisor forked, then
                    self.seen[(proc.pid, proc.start)] = proc       # led its own session (setsid)
            time.sleep(0.005)     # each look costs ~1–2 ms of CPU: every 1 ms kept a core busy

    def supervisors(self) -> list[Proc]:
        """The run supervisors seen (each leads a session of its own, its ranks in it: `left_behind`
        finds a rank by its session even if it lived too briefly for a look to see it)."""
        return [p for p in self.seen.values() if p.pid == p.session != self.launcher_session]

    def left_behind(self, timeout: float = 10) -> list[Proc]:
        """Processes of the run still living once `timeout` has passed (empty as soon as none is)."""
        deadline = time.monotonic() + timeout
        while True:
            procs = processes()
            sessions = {p.session for p in self.seen.values()} - {self.launcher_session}
            living = [p for p in procs.values() if p.living and ((p.pid, p.start) in self.seen or p.session in sessions)]
            if not living or time.monotonic() > deadline:
                return living
            time.sleep(0.05)


def run_all(server, specs: list[tuple[str, int, dict]], in_flight: int = 6, timeout: float = 280) -> list[dict]:
    """Start the runs a few at a time (the server runs two at once and queues the rest), wait for
    every one; each result is {"run": its final state, "events": its event log}. `timeout` is a stop for
    runs that never end (each has the server's time limit besides), within the tests' 300 s."""
    results: list[dict | None] = [None] * len(specs)
    pending, running = list(enumerate(specs)), {}
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=server.url, timeout=ANSWER_S) as client:
        while pending or running:
            assert time.monotonic() < deadline, f"runs did not finish: {[specs[i] for i in running]}"
            while pending and len(running) < in_flight:
                i, (lesson, world, params) = pending.pop(0)
                response = client.post("/api/runs", json={"lesson": lesson, "world_size": world, "params": params})
                assert response.status_code == 201, response.text
                running[i] = response.json()["id"]
            for i, run_id in list(running.items()):
                run = client.get(f"/api/runs/{run_id}").json()
                if run["status"] in FINAL:
                    results[i] = {"run": run, "events": events(server, run_id)}
                    del running[i]
            time.sleep(0.02)
    return results


def of_rank(got: list[dict], rank: int, kind: str, **match) -> list[dict]:
    return [e for e in got if e["rank"] == rank and e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


async def until(predicate, timeout: float = 10) -> None:
    """Yields to the event loop until `predicate()` holds: however busy the machine, the other tasks
    have the time they need, and a test waits no longer than that."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s for {predicate}")
        await asyncio.sleep(0.005)


class RecordingSocket:
    """Stands in for a websocket a server-side sender writes to: keeps every message it is sent."""

    def __init__(self):
        self.sent: list[dict] = []

    async def send_text(self, text: str) -> None:
        self.sent.append(json.loads(text))
        await asyncio.sleep(0)


def client(live, name: str | None = None, password: str | None = None):
    """A client of the hosted lab with its own cookies, signed in as `name` if given; use it in a `with`."""
    c = httpx.Client(base_url=live.url, timeout=30)
    if name:
        response = c.post("/api/auth/login", json={"name": name, "password": password})
        assert response.status_code == 200, response.text
    return closing(c)
