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
MAX_CHECKS_KEPT = 1024              # answers of the lessons' torch-side rules kept (oldest dropped)


class LauncherError(RuntimeError):
    pass


class Launcher:
    def __init__(self):
        self._proc: asyncio.subprocess.Process | None = None
        self._write_lock = asyncio.Lock()              # one request's line at a time on stdin
        self._starting: asyncio.Task | None = None
        self._reader: asyncio.Task | None = None
        self._pending: dict[int, tuple] = {}            # request id → (the launcher process asked, its reply to come)
        self._checked: dict[str, list[tuple[str, str]]] = {}   # a lesson's torch-side rules, answered before
        self._choices: dict[str, dict[str, list]] = {}          # by lesson: values only torch knows, answered before
        self._next_id = 0
        self.info: dict = {}
        self.command = [sys.executable, "-m", "workers.launcher"]

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
            *self.command, cwd=str(REPO_ROOT), env=env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 20)
        try:
            self.info = await self._next_reply(lambda reply: "ready" in reply)
        except LauncherError:
            raise LauncherError(f"the launcher exited during start-up (status {await self._proc.wait()})") from None
        self._reader = asyncio.create_task(self._read_replies(self._proc))

    async def _ask(self, message: dict) -> dict:
        """Send one request and wait for the reply that carries its id. Requests do not wait on each
        other's replies (a check is not held up behind a launch); a reply to a request whose asker
        gave up (a cancelled HTTP request) is dropped, so a reply is never taken for another's."""
        self._next_id += 1
        request_id = self._next_id
        data = (json.dumps({"id": request_id, **message}) + "\n").encode()
        if len(data) > MAX_REQUEST_BYTES:
            raise LauncherError(f"the request is too large for the launcher ({len(data)} bytes; "
                                f"at most {MAX_REQUEST_BYTES})")
        reply = asyncio.get_running_loop().create_future()
        try:
            async with self._write_lock:
                await self.start()
                self._pending[request_id] = (self._proc, reply)
                self._proc.stdin.write(data)
                await self._proc.stdin.drain()
            answer = await reply
        finally:
            self._pending.pop(request_id, None)
        if "error" in answer:
            raise LauncherError(answer["error"])
        return answer

    async def _read_replies(self, proc: asyncio.subprocess.Process) -> None:
        """Hand each reply to the request that waits for it; when the launcher exits, fail them all."""
        try:
            while True:
                reply = await self._next_reply(lambda reply: "id" in reply, proc)
                asked, waiting = self._pending.get(reply["id"], (None, None))
                if asked is proc and not waiting.done():
                    waiting.set_result(reply)
        except LauncherError:
            for asked, waiting in list(self._pending.values()):
                if asked is proc and not waiting.done():
                    waiting.set_exception(LauncherError("the launcher exited"))

    async def _next_reply(self, wanted, proc: asyncio.subprocess.Process | None = None) -> dict:
        """The launcher's next line that is a reply `wanted` accepts. A line that is not one (something
        else wrote to its stdout) is logged and skipped, so it cannot stand in for an answer."""
        proc = proc or self._proc
        while True:
            try:
                line = await proc.stdout.readline()
            except ValueError:          # over-long: its tail comes as a line of its own, skipped too
                log.warning("the launcher's stdout had an over-long line; skipped")
                continue
            if not line:
                raise LauncherError("the launcher exited")
            try:
                reply = json.loads(line)
            except ValueError:
                reply = None
            if isinstance(reply, dict) and wanted(reply):
                return reply
            log.warning("the launcher's stdout had a line that is not a reply: %r", line[:200])

    async def launch(self, request: LaunchRequest) -> int:
        """Fork the run's supervisor and ranks; returns the supervisor's pid (its process group)."""
        return (await self._ask({"launch": request.to_json()}))["pid"]

    async def check(self, lesson: str, world_size: int, params: dict) -> list[tuple[str, str]]:
        """A lesson's rules that need torch, checked in the launcher: [(field, message[, code, params])]. The rules are
        pure functions of their input: an answer is kept, and asked again it costs no round trip."""
        key = json.dumps([lesson, world_size, params], sort_keys=True)
        if key not in self._checked:
            reply = await self._ask({"check": {"lesson": lesson, "world_size": world_size, "params": params}})
            if len(self._checked) >= MAX_CHECKS_KEPT:
                self._checked.pop(next(iter(self._checked)))
            self._checked[key] = [tuple(problem) for problem in reply["problems"]]
        return self._checked[key]

    async def choices(self, lesson: str) -> dict[str, list]:
        """Values of the lesson's fields that only torch knows (e.g. the schedules this torch ships), by
        field; asked of the launcher once (it imports what they need then, not at its start)."""
        if lesson not in self._choices:
            self._choices[lesson] = (await self._ask({"choices": lesson}))["choices"]
        return self._choices[lesson]

    async def stop(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        if self._reader is not None:
            self._reader.cancel()
        if not self.alive:
            return
        self._proc.stdin.close()
        try:
            await asyncio.wait_for(self._proc.wait(), 3)
        except asyncio.TimeoutError:
            self._proc.kill()
            await self._proc.wait()
