"""A lecture hall on one machine: N websocket followers (default 500) in one room, a presenter who
runs tp_mlp and then steps 50 times. Reports the presenter-step → follower-receipt delay (p50, p99),
whether every follower received every event of the run exactly once, and the server's memory.
Target: p99 ≤ 250 ms, no follower missing an event.
Usage: python bench/room_followers.py [--followers 500] [--steps 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import websockets

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.conftest import LiveServer  # noqa: E402


class Follower:
    def __init__(self):
        self.seqs: list[int] = []
        self.cursor_seen: dict[int, float] = {}    # cursor → when this follower saw it
        self.done = asyncio.Event()

    async def follow(self, url: str, ready: asyncio.Event, counter: list):
        async with websockets.connect(url, max_queue=None, open_timeout=60) as ws:
            await ws.recv()                        # the room's state
            counter[0] += 1
            if counter[0] == counter[1]:
                ready.set()
            async for text in ws:
                message = json.loads(text)
                if message["type"] == "event":
                    self.seqs.append(message["event"]["seq"])
                    if message["event"]["kind"] == "run" and message["event"].get("status") == "done":
                        self.done.set()
                elif message["type"] == "state" and message["cursor"] not in self.cursor_seen:
                    self.cursor_seen[message["cursor"]] = time.perf_counter()


def server_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def lecture(server: LiveServer, n: int, steps: int) -> None:
    room = httpx.post(server.url + "/api/rooms").json()
    url = f"{server.ws_url}/ws/rooms/{room['code']}"
    followers = [Follower() for _ in range(n)]
    ready, counter = asyncio.Event(), [0, n]
    tasks = [asyncio.create_task(f.follow(url, ready, counter)) for f in followers]
    await asyncio.wait_for(ready.wait(), 120)
    rss_idle = server_rss_mib(server.proc.pid)
    async with websockets.connect(f"{url}?secret={room['secret']}", max_queue=None) as presenter:
        started = time.perf_counter()
        await presenter.send(json.dumps({"op": "run", "lesson": "tp_mlp", "world_size": 4}))
        await asyncio.wait_for(asyncio.gather(*(f.done.wait() for f in followers)), 120)
        run_s = time.perf_counter() - started
        total = max(max(f.seqs) for f in followers)
        complete = sum(f.seqs == list(range(1, total + 1)) for f in followers)
        delays = []
        for step in range(1, steps + 1):
            sent = time.perf_counter()
            await presenter.send(json.dumps({"op": "step"}))
            deadline = time.monotonic() + 5
            while any(step not in f.cursor_seen for f in followers) and time.monotonic() < deadline:
                await asyncio.sleep(0.002)
            delays += [f.cursor_seen[step] - sent for f in followers if step in f.cursor_seen]
        missing_steps = n * steps - len(delays)
        rss_peak = server_rss_mib(server.proc.pid)
    for task in tasks:
        task.cancel()
    delays.sort()
    p50, p99 = statistics.median(delays), delays[int(len(delays) * 0.99) - 1]
    print(f"{n} followers, run of {total} events in {run_s:.2f} s: {complete}/{n} followers got every event "
          f"exactly once, in order")
    print(f"presenter step → follower receipt over {steps} steps: p50 {p50 * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms, max {delays[-1] * 1000:.1f} ms, {missing_steps} receipts missing "
          f"(target p99 ≤ 250 ms, none missing)")
    print(f"server memory (RSS): {rss_idle:.0f} MiB with {n} followers idle, {rss_peak:.0f} MiB after the lecture")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--followers", type=int, default=500)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        server = LiveServer(Path(data_dir)).start()
        try:
            asyncio.run(lecture(server, args.followers, args.steps))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
