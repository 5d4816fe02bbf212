"""The sign-in rate limit: after `SIGNIN_MAX_FAILURES` wrong passwords for one user name, or
`SIGNIN_MAX_FAILURES_PER_ADDRESS` from one client address, within `SIGNIN_WINDOW_S` seconds, every
further sign-in for that name or from that address is refused (429, with Retry-After) — even with the
right password — until the oldest of those failures leaves the window. A success clears its name.

It lives in memory, in this one process: a restart forgets every failure.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable
from app.messages import Message, say

__all__ = ["Blocked", "SignInLimit"]

MAX_KEYS = 10_000         # past this many names and addresses, the expired ones are forgotten


@dataclass(frozen=True)
class Blocked:
    retry_after_s: int        # whole seconds until a sign-in may be tried again
    said: Message             # the refusal, with its code

    @property
    def message(self) -> str:
        return self.said.text


class SignInLimit:
    """Failures per name and per address in a sliding window. Thread-safe (sign-in runs in threads)."""

    def __init__(self, per_name: int, per_address: int, window_s: float, clock: Callable[[], float] = time.monotonic):
        self.per_name, self.per_address, self.window_s = per_name, per_address, window_s
        self._clock = clock
        self._failures: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()

    def blocked(self, name: str, address: str) -> Blocked | None:
        """Why a sign-in for `name` from `address` is refused now, or None."""
        with self._lock:
            now = self._clock()
            by_name = self._wait_s(("name", name), self.per_name, now)
            by_address = self._wait_s(("address", address), self.per_address, now)
        if by_name:
            return Blocked(by_name, say("auth.too_many_for_name", "too many wrong passwords for '{name}'; try again in {seconds} s",
                                    name=name, seconds=by_name))
        if by_address:
            return Blocked(by_address, say("auth.too_many_from_address", "too many failed sign-ins from your address; "
                                       "try again in {seconds} s", seconds=by_address))
        return None

    def failed(self, name: str, address: str) -> None:
        with self._lock:
            now = self._clock()
            if len(self._failures) >= MAX_KEYS:
                self._forget_expired(now)
            for key in (("name", name), ("address", address)):
                self._failures.setdefault(key, deque()).append(now)

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._failures.pop(("name", name), None)

    def _wait_s(self, key: tuple[str, str], limit: int, now: float) -> int:
        """Whole seconds until `key` has fewer than `limit` failures in the window (0: now)."""
        times = self._failures.get(key)
        if not times:
            return 0
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if len(times) < limit:
            return 0
        return max(1, math.ceil(times[-limit] + self.window_s - now))

    def _forget_expired(self, now: float) -> None:
        for key in [k for k, times in self._failures.items() if not times or times[-1] <= now - self.window_s]:
            del self._failures[key]
