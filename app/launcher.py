"""The server's handle on the warm launcher process (`python -m workers.launcher`)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys

from app.settings import REPO_ROOT
from workers.launch_request import LaunchRequest


log = logging.getLogger("paralab.launcher")


MAX_REQUEST_BYTES = 64 * 1024       # a launch or check request: far above any valid one


class LauncherError(RuntimeError):
    pass


class Launcher:
    def __init__(self):
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._starting: asyncio.Task | None = None
        self._next_id = 0
        self.info: dict = {}

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    @property
    def ready(self) -> bool:
        started = self._starting is not None and self._starting.done() and not self._starting.cancelled()
        return started and self._starting.exception() is None and self.alive

    @property
    def state(self) -> str:
        """"ready"; "starting" (importing torch); or "down" (it died, and is not yet started again)."""
        if self.ready:
            return "ready"
        if self._proc is not None and not self.alive and (self._starting is None or self._starting.done()):
            return "down"
        return "starting"

    async def wait(self) -> int:
        """Until the launcher process exits; its exit status."""
        return await self._proc.wait()

    async def start(self) -> None:
        """Start the launcher (once; again if it died); returns when torch and the lessons are loaded."""
        if self._starting is None or (self._starting.done() and not self.alive):
            self._starting = asyncio.create_task(self._spawn())
        await asyncio.shield(self._starting)

    async def _spawn(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "workers.launcher", cwd=str(REPO_ROOT), env=env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 20)
        try:
            self.info = await self._read_reply()
        except LauncherError:
            raise LauncherError(f"the launcher exited during start-up (status {await self._proc.wait()})") from None

    async def _ask(self, message: dict) -> dict:
        """Send one request and wait for the reply that carries its id. Replies to earlier requests
        whose askers gave up (a cancelled HTTP request) are skipped, so the channel never falls out
        of step: a reply can never be taken for another request's."""
        self._next_id += 1
        message = {"id": self._next_id, **message}
        data = (json.dumps(message) + "\n").encode()
        if len(data) > MAX_REQUEST_BYTES:
            raise LauncherError(f"the request is too large for the launcher ({len(data)} bytes; "
                                f"at most {MAX_REQUEST_BYTES})")
        async with self._lock:
            await self.start()
            self._proc.stdin.write(data)
            await self._proc.stdin.drain()
            reply = await self._read_reply(message["id"])
        if "error" in reply:
            raise LauncherError(reply["error"])
        return reply

    async def _read_reply(self, request_id: int | None = None) -> dict:
        """The launcher's reply to request `request_id` (None: its start-up message). A line that is
        not a reply (something else wrote to its stdout), or is another request's reply, is logged
        and skipped, so it cannot stand in for the answer."""
        while True:
            try:
                line = await self._proc.stdout.readline()
            except ValueError:          # over-long: its tail comes as a line of its own, skipped too
                log.warning("the launcher's stdout had an over-long line; skipped")
                continue
            if not line:
                raise LauncherError("the launcher exited")
            try:
                reply = json.loads(line)
            except ValueError:
                reply = None
            if isinstance(reply, dict) and reply.get("id") == request_id:
                return reply
            log.warning("the launcher's stdout had a line that is not the reply awaited: %r", line[:200])

    async def launch(self, request: LaunchRequest) -> int:
        """Fork the run's supervisor and ranks; returns the supervisor's pid (its process group)."""
        return (await self._ask({"launch": request.to_json()}))["pid"]

    async def check(self, lesson: str, world_size: int, params: dict) -> list[tuple[str, str]]:
        """A lesson's rules that need torch, checked in the launcher: [(field, message)]."""
        reply = await self._ask({"check": {"lesson": lesson, "world_size": world_size, "params": params}})
        return [tuple(problem) for problem in reply["problems"]]

    async def stop(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        if not self.alive:
            return
        self._proc.stdin.close()
        try:
            await asyncio.wait_for(self._proc.wait(), 3)
        except asyncio.TimeoutError:
            self._proc.kill()
            await self._proc.wait()
