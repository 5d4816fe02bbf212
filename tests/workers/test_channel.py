"""A rank's channel: messages are written by its own thread, in the order sent, all of them by close()."""

from __future__ import annotations

import base64
import json
import socket
import threading

import pytest
import torch

from workers import preview as previews
from workers.channel import EventChannel


class Listener:
    """The server's side of one channel: every line it receives, decoded."""

    def __init__(self):
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._server.getsockname()[1]}"
        self.lines: list[dict] = []
        self.connection: socket.socket | None = None
        self._done = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        self.connection, _ = self._server.accept()
        buffer = b""
        while data := self.connection.recv(1 << 16):
            buffer += data
            *whole, buffer = buffer.split(b"\n")
            self.lines.extend(json.loads(line) for line in whole)
        self._done.set()

    def until_closed(self) -> list[dict]:
        assert self._done.wait(10), "the channel never closed"
        return self.lines


@pytest.fixture
def listener():
    return Listener()


def test_every_message_arrives_in_order_once_closed(listener):
    channel = EventChannel(listener.address, "run1", "token", 0)
    blob = previews.blob(torch.randn(64, 1024), "r0t0")           # 350 KB of base64
    channel.send(blob)
    for i in range(300):
        channel.send({"kind": "log", "rank": 0, "t": float(i), "message": f"line {i}"})
    channel.close()
    hello, got_blob, *logs = listener.until_closed()
    assert hello == {"hello": "run1", "token": "token", "rank": 0}
    assert base64.b64decode(got_blob["data"]) == bytes(blob["data"])
    assert [m["message"] for m in logs] == [f"line {i}" for i in range(300)]


def test_a_message_changed_after_it_is_sent_goes_as_it_was(listener):
    channel = EventChannel(listener.address, "run1", "token", 0)
    event = {"kind": "p2p", "rank": 0, "t": 1.0, "peer": None}
    channel.send(event)
    event["peer"] = 3                                             # the tracer learns a receive's peer later
    channel.close()
    assert listener.until_closed()[1]["peer"] is None


def test_flush_waits_until_what_was_sent_is_written(listener):
    channel = EventChannel(listener.address, "run1", "token", 1)
    for i in range(50):
        channel.send({"kind": "log", "rank": 1, "t": 0.0, "message": "x" * 10_000})
    assert channel.flush()
    listener.connection.shutdown(socket.SHUT_WR)   # nothing for receive(); the writes are what we read
    channel.close()
    assert len(listener.until_closed()) == 51


def test_a_message_json_cannot_hold_is_said_at_the_next_send_and_the_rest_still_goes(listener):
    channel = EventChannel(listener.address, "run1", "token", 0)
    channel.send({"kind": "log", "rank": 0, "t": 0.0, "message": object()})
    channel.flush()
    with pytest.raises(TypeError, match="not JSON serializable"):
        channel.send({"kind": "log", "rank": 0, "t": 0.0, "message": "after"})
    channel.send({"kind": "log", "rank": 0, "t": 0.0, "message": "still"})
    channel.close()
    assert [m.get("message") for m in listener.until_closed()] == [None, "still"]


def test_events_never_go_back_in_time(listener):
    channel = EventChannel(listener.address, "run1", "token", 0)
    for t in (1.0, 3.0, 2.0, 4.0):
        channel.send({"kind": "log", "rank": 0, "t": t, "message": str(t)})
    channel.close()
    assert [m["t"] for m in listener.until_closed()[1:]] == [1.0, 3.0, 3.0, 4.0]
