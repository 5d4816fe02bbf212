"""A rank's channel: events and tensor blobs written at once, in order, by the thread that sends them."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import torch

from workers import preview as previews
from workers.channel import EventChannel
from workers.protocol import Encoded, encode, frame_length


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
        stream = self.connection.makefile("rb")
        while line := stream.readline():
            message = json.loads(line)
            if (length := frame_length(message)) is not None:   # a blob's raw values follow its line
                message["data"] = stream.read(length)
            self.lines.append(message)
        self._done.set()

    def until_closed(self) -> list[dict]:
        assert self._done.wait(10), "the channel never closed"
        return self.lines


@pytest.fixture
def listener():
    return Listener()


def test_events_and_blobs_go_in_order(listener):
    channel = EventChannel(listener.address, "run1", "token", 0)
    blobs = [previews.blob(torch.randn(64, 1024), f"r0t{i}") for i in range(5)]   # 256 KiB of values each
    for i in range(300):
        if i % 60 == 0:
            channel.send(blobs[i // 60])
        channel.send({"kind": "log", "rank": 0, "t": float(i), "message": f"line {i}"})
    channel.close()
    hello, *rest = listener.until_closed()
    assert hello == {"hello": "run1", "token": "token", "rank": 0}
    assert [m.get("message", m.get("blob")) for m in rest] == [
        name for i in range(300) for name in ([f"r0t{i // 60}"] if i % 60 == 0 else []) + [f"line {i}"]]
    got = {m["blob"]: m["data"] for m in rest if "blob" in m}
    assert got == {b["blob"]: bytes(b["data"]) for b in blobs}


def test_an_event_is_written_before_send_returns(listener):
    """A rank that dies right after a call (os._exit, a segfault) has said what it did."""
    channel = EventChannel(listener.address, "run1", "token", 0)
    channel.send({"kind": "log", "rank": 0, "t": 0.0, "message": "the last words"})
    deadline = time.monotonic() + 10
    while len(listener.lines) < 2 and time.monotonic() < deadline:   # read by the other side, not flushed
        time.sleep(0.01)
    assert listener.lines[1]["message"] == "the last words"
    channel.close()


def test_a_message_changed_after_it_is_sent_goes_as_it_was(listener):
    channel = EventChannel(listener.address, "run1", "token", 0)
    event = {"kind": "p2p", "rank": 0, "t": 1.0, "peer": None}
    channel.send(event)
    event["peer"] = 3                                             # the tracer learns a receive's peer later
    channel.close()
    assert listener.until_closed()[1]["peer"] is None


def test_a_blob_goes_with_the_next_event_whole_and_close_writes_one_still_held(listener):
    """A blob's frame and the event after it are one `sendmsg`: a loop until the socket has taken
    all of it (here a small send buffer makes the kernel take it in pieces)."""
    channel = EventChannel(listener.address, "run1", "token", 1)
    channel._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    blobs = [previews.blob(torch.randn(128, 512), f"r1t{i}") for i in range(2)]
    channel.send(blobs[0])
    channel.send({"kind": "log", "rank": 1, "t": 0.0, "message": "names r1t0"})
    deadline = time.monotonic() + 10
    while len(listener.lines) < 3 and time.monotonic() < deadline:   # read by the other side, not flushed
        time.sleep(0.01)
    assert [m.get("blob", m.get("message")) for m in listener.lines[1:]] == ["r1t0", "names r1t0"]
    assert listener.lines[1]["data"] == bytes(blobs[0]["data"])
    channel.send(blobs[1])
    channel.close()
    assert listener.until_closed()[3]["data"] == bytes(blobs[1]["data"])


def test_a_message_json_cannot_hold_raises_and_the_rest_still_goes(listener):
    channel = EventChannel(listener.address, "run1", "token", 0)
    with pytest.raises(TypeError, match="not JSON serializable"):
        channel.send({"kind": "log", "rank": 0, "t": 0.0, "message": object()})
    channel.send({"kind": "log", "rank": 0, "t": 0.0, "message": "still"})
    channel.close()
    assert [m.get("message") for m in listener.until_closed()] == [None, "still"]


def test_events_never_go_back_in_time(listener):
    channel = EventChannel(listener.address, "run1", "token", 0)
    for t in (1.0, 3.0, 2.0, 4.0):
        channel.send({"kind": "log", "rank": 0, "t": t, "message": str(t)})
    channel.close()
    assert [m["t"] for m in listener.until_closed()[1:]] == [1.0, 3.0, 3.0, 4.0]


def test_an_event_whose_line_is_written_already_goes_as_that_line_unless_its_time_moves(listener):
    """The tracer writes an event's line once (to check its size) and the channel sends that line;
    an event reported after a later one of its rank is placed at that time, so it is written again."""
    channel = EventChannel(listener.address, "run1", "token", 0)
    late = {"kind": "log", "rank": 0, "t": 1.0, "message": "late"}
    channel.send(Encoded({"kind": "log", "rank": 0, "t": 2.0, "message": "as written"}, encode(
        {"kind": "log", "rank": 0, "t": 2.0, "message": "as written"})))
    channel.send(Encoded(late, encode(late)))
    channel.close()
    assert [(m["message"], m["t"]) for m in listener.until_closed()[1:]] == [("as written", 2.0), ("late", 2.0)]
