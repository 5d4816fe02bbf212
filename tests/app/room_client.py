"""What the room tests share: an async websocket client of a lecture room that reads every message
as it arrives (stamping when), opening rooms, reading them over REST, and a follower that completes
the websocket handshake on a plain socket and then never reads."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import time
from urllib.parse import urlencode

import httpx
import websockets
from websockets.exceptions import ConnectionClosed

FINAL = ("done", "failed", "cancelled")


def is_final(message: dict) -> bool:
    return (message.get("type") == "event" and message["event"].get("kind") == "run"
            and message["event"].get("status") in FINAL)


def is_state(message: dict) -> bool:
    return message.get("type") == "state"


def is_event(message: dict, **fields) -> bool:
    return message.get("type") == "event" and all(message["event"].get(k) == v for k, v in fields.items())


class RoomClient:
    """One socket of a room (a follower, or the presenter with `secret`). A task reads every message
    as it comes into `got`, with its arrival time in `at`; `next` takes them in order."""

    def __init__(self, ws):
        self.ws = ws
        self.got: list[dict] = []
        self.at: list[float] = []
        self.pos = 0                      # messages before this one were taken by `next`
        self._arrived = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, server, code: str, **query) -> "RoomClient":
        query = urlencode({k: v for k, v in query.items() if v is not None})
        url = f"{server.ws_url}/ws/rooms/{code}" + (f"?{query}" if query else "")
        return cls(await websockets.connect(url, open_timeout=20, close_timeout=2, max_queue=None))

    async def _read(self) -> None:
        try:
            async for text in self.ws:
                self.got.append(json.loads(text))
                self.at.append(time.monotonic())
                self._arrived.set()
        except ConnectionClosed:
            pass
        finally:
            self._arrived.set()

    @property
    def closed(self) -> bool:
        return self._reader.done()

    @property
    def close_code(self) -> int | None:
        return self.ws.close_code

    async def send(self, message=None, **op) -> float:
        """Send an op (`send(op="step")`) or a raw text; when it was sent."""
        sent = time.monotonic()
        await self.ws.send(message if message is not None else json.dumps(op))
        return sent

    async def next(self, predicate=lambda m: True, timeout: float = 15) -> dict:
        """The next message not yet taken that satisfies `predicate` (those before it are taken too)."""
        deadline = time.monotonic() + timeout
        while True:
            while self.pos < len(self.got):
                self.pos += 1
                if predicate(self.got[self.pos - 1]):
                    return self.got[self.pos - 1]
            if self.closed:
                raise AssertionError(f"the socket closed ({self.close_code}) first; last messages: {self.got[-3:]}")
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), max(deadline - time.monotonic(), 0.001))
            except asyncio.TimeoutError:
                raise TimeoutError(f"no such message within {timeout} s; last messages: {self.got[-3:]}") from None

    async def error(self, timeout: float = 10):
        """The next refusal sent to this socket."""
        return (await self.next(lambda m: "error" in m, timeout))["error"]

    async def until_final(self, timeout: float = 60) -> dict:
        return await self.next(is_final, timeout)

    async def wait_closed(self, timeout: float = 10) -> int | None:
        await asyncio.wait_for(asyncio.shield(self._reader), timeout)
        return self.close_code

    def events(self, run: str | None = None) -> list[dict]:
        """Every event received (of run `run`, if given), in order of arrival."""
        return [m["event"] for m in self.got if m.get("type") == "event" and run in (None, m["run"])]

    def states(self) -> list[dict]:
        return [m for m in self.got if is_state(m)]

    def arrival(self, predicate) -> float:
        """When the first message satisfying `predicate` arrived."""
        return next(t for m, t in zip(self.got, self.at) if predicate(m))

    async def close(self) -> None:
        await self.ws.close()
        await asyncio.wait_for(asyncio.shield(self._reader), 10)


def waiting_ranks(client: RoomClient) -> set[int]:
    """Ranks (of a step-mode run) whose last gate event, as this client received it, says they wait."""
    phase = {}
    for event in client.events():
        if event["kind"] == "gate":
            phase[event["rank"]] = event["phase"]
    return {rank for rank, p in phase.items() if p == "waiting"}


async def until_waiting(client: RoomClient, ranks: set[int], timeout: float = 30) -> None:
    await client.next(lambda m: ranks <= waiting_ranks(client), timeout)


async def close_all(*clients: RoomClient) -> None:
    await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)


# ---- REST --------------------------------------------------------------------------------------

async def new_room(server) -> dict:
    async with httpx.AsyncClient() as http:
        response = await http.post(f"{server.url}/api/rooms")
    assert response.status_code == 201, response.text
    return response.json()


async def get(server, path: str, **params) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(server.url + path, params=params)


async def room_state(server, code: str) -> dict:
    response = await get(server, f"/api/rooms/{code}")
    assert response.status_code == 200, response.text
    return response.json()


async def run_events(server, run_id: str) -> list[dict]:
    response = await get(server, f"/api/runs/{run_id}/events")
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines()]


async def run_count(server) -> int:
    return len((await get(server, "/api/runs", limit=1_000_000)).json())


# ---- a follower that never reads -----------------------------------------------------------------

class StalledFollower:
    """A follower on a plain socket with a tiny receive buffer: it completes the websocket handshake
    and then never reads again, so the server's writes to it pile up in the kernel and then block."""

    def __init__(self, server, code: str):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # before connect: a small window
        self.sock.settimeout(10)
        self.sock.connect(("127.0.0.1", server.port))
        self.server_port = server.port
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /ws/rooms/{code} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                           f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:                  # the response head only, byte by byte
            head += self.sock.recv(1)
        assert head.startswith(b"HTTP/1.1 101"), head

    def server_unsent_bytes(self) -> int:
        """Bytes the server has written to this follower that the kernel could not deliver yet (the
        send queue of the server's end of the connection, from /proc/net/tcp)."""
        local = self.sock.getsockname()[1]
        for line in open("/proc/net/tcp").read().splitlines()[1:]:
            fields = line.split()
            src, dst = (int(address.split(":")[1], 16) for address in fields[1:3])
            if (src, dst) == (self.server_port, local):
                return int(fields[4].split(":")[0], 16)
        raise LookupError("the server's end of the stalled follower's connection is not in /proc/net/tcp")

    def close(self) -> None:
        self.sock.close()       # unread data in its buffer: the kernel resets the connection
