"""Step mode: before each traced collective or send/recv, the rank stops at a gate, says where it
is (a `gate` event with the call's op, group, sequence number and source line) and waits until the
server releases it. A released rank enters the call; if its peers have not arrived, it is blocked
inside the collective until the last member enters — a collective is a rendezvous.

Control messages from the server (JSON lines on the rank's channel):
    {"release": true}     go on into the call this rank waits at
    {"stepping": false}   stop gating (and go on, if waiting)       — "continue"
    {"stepping": true}    gate again from the next call on          — "pause"
"""

from __future__ import annotations

from typing import Callable

from workers.channel import EventChannel
from workers.protocol import Gate as GateEvent

_CALL_FIELDS = ("op", "group", "ranks", "cseq", "peer", "tag", "label", "site", "shape", "bytes")


class Gate:
    def __init__(self, channel: EventChannel, rank: int, clock: Callable[[], float], stepping: bool):
        self.channel = channel
        self.rank = rank
        self.clock = clock
        self.stepping = stepping

    def __call__(self, call: dict) -> None:
        """The tracer's `before_call` hook."""
        self._apply_pending()
        if not self.stepping:
            return
        where = {key: call[key] for key in _CALL_FIELDS if call.get(key) is not None}
        self.channel.send(GateEvent(phase="waiting", rank=self.rank, t=self.clock(), call=call["kind"], **where).to_dict())
        while True:
            message = self.channel.receive()
            if message is None:   # the server went away: run on rather than wait forever
                self.stepping = False
                break
            self._apply(message)
            if message.get("release") or not self.stepping:
                break
        self.channel.send(GateEvent(phase="released", rank=self.rank, t=self.clock(), call=call["kind"], **where).to_dict())

    def _apply_pending(self) -> None:
        while (message := self.channel.receive(timeout=0)) is not None:
            self._apply(message)

    def _apply(self, message: dict) -> None:
        if "stepping" in message:
            self.stepping = bool(message["stepping"])
