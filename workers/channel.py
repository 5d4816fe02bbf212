"""The rank → server byte stream: JSON lines over a TCP socket, after a hello line.

A socket rather than a pipe so that ranks on other hosts (started by torchrun) can later report to
the same server with the run's token.
"""

from __future__ import annotations

import socket
import threading

from workers.protocol import encode


class EventChannel:
    """A connection to the server's event port that sends one message per call, thread-safely."""

    def __init__(self, address: str, run_id: str, token: str, rank: int | None):
        host, port = address.rsplit(":", 1)
        self._sock = socket.create_connection((host, int(port)))
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._lock = threading.Lock()
        self.send({"hello": run_id, "token": token, "rank": rank})

    def send(self, message: dict) -> None:
        data = encode(message)
        with self._lock:
            self._sock.sendall(data)

    def close(self) -> None:
        with self._lock:
            try:
                self._sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self._sock.close()
