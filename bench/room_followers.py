"""A lecture hall on one machine: N websocket followers (default 500) in one room, a presenter who
runs tp_mlp and then steps 50 times. Reports the presenter-step → follower-receipt delay (p50, p99),
whether every follower received every event of the run exactly once, and the server's memory.
Target: p99 ≤ 250 ms, no follower missing an event. With --baseline REF, a server started from that
commit holds the same lecture too, alternating with this checkout's (--rounds times each), and the
ratio of the p99s is printed: this machine's load swings too much for before/after from separate runs.
Usage: python bench/room_followers.py [--followers 500] [--steps 50] [--baseline REF] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
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
        # no keepalive pings: on a loaded machine their answers come late and the client would hang up
        async with websockets.connect(url, max_queue=None, open_timeout=60, ping_interval=None) as ws:
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


def server_cpu_s(pid: int) -> float:
    """The server process's own CPU time so far (user + system; not the launcher's or the ranks'):
    what fanning out costs, which a loaded machine's scheduling does not change much."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def lecture(server: LiveServer, n: int, steps: int) -> dict:
    room = httpx.post(server.url + "/api/rooms").json()
    url = f"{server.ws_url}/ws/rooms/{room['code']}"
    followers = [Follower() for _ in range(n)]
    ready, counter = asyncio.Event(), [0, n]
    tasks = [asyncio.create_task(f.follow(url, ready, counter)) for f in followers]
    await asyncio.wait_for(ready.wait(), 120)
    rss_idle = server_rss_mib(server.proc.pid)
    async with websockets.connect(f"{url}?secret={room['secret']}", max_queue=None) as presenter:
        started, cpu_before_run = time.perf_counter(), server_cpu_s(server.proc.pid)
        await presenter.send(json.dumps({"op": "run", "lesson": "tp_mlp", "world_size": 4}))
        await asyncio.wait_for(asyncio.gather(*(f.done.wait() for f in followers)), 120)
        run_s, run_cpu_s = time.perf_counter() - started, server_cpu_s(server.proc.pid) - cpu_before_run
        total = max(max(f.seqs) for f in followers)
        complete = sum(f.seqs == list(range(1, total + 1)) for f in followers)
        delays, cpu_before_steps = [], server_cpu_s(server.proc.pid)
        for step in range(1, steps + 1):
            sent = time.perf_counter()
            await presenter.send(json.dumps({"op": "step"}))
            deadline = time.monotonic() + 5
            while any(step not in f.cursor_seen for f in followers) and time.monotonic() < deadline:
                await asyncio.sleep(0.002)
            delays += [f.cursor_seen[step] - sent for f in followers if step in f.cursor_seen]
        steps_cpu_s = server_cpu_s(server.proc.pid) - cpu_before_steps
        rss_peak = server_rss_mib(server.proc.pid)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"events": total, "run_s": run_s, "run_cpu_s": run_cpu_s, "steps_cpu_s": steps_cpu_s,
            "complete": complete, "delays": delays,
            "missing": n * steps - len(delays), "rss_idle": rss_idle, "rss_peak": rss_peak}


def report(side: str, n: int, steps: int, lectures: list[dict]) -> tuple[float, float, float]:
    """Prints one side's lectures; returns its p99 (s) and its server CPU seconds for a run and for the steps."""
    delays = sorted(d for lecture_ in lectures for d in lecture_["delays"])
    p50, p99 = statistics.median(delays), delays[int(len(delays) * 0.99) - 1]
    print(f"{side}:")
    for lecture_ in lectures:
        own = sorted(lecture_["delays"])
        print(f"  {n} followers, run of {lecture_['events']} events in {lecture_['run_s']:.2f} s: "
              f"{lecture_['complete']}/{n} followers got every event exactly once, in order; server CPU "
              f"{lecture_['run_cpu_s']:.2f} s for the run, {lecture_['steps_cpu_s']:.2f} s for the steps; steps p50 "
              f"{statistics.median(own) * 1000:.1f} ms, p99 {own[int(len(own) * 0.99) - 1] * 1000:.1f} ms; "
              f"server memory (RSS) {lecture_['rss_idle']:.0f} MiB with {n} followers idle, "
              f"{lecture_['rss_peak']:.0f} MiB after the lecture")
    print(f"  presenter step → follower receipt over {steps} steps × {len(lectures)}: p50 {p50 * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms, max {delays[-1] * 1000:.1f} ms, "
          f"{sum(lecture_['missing'] for lecture_ in lectures)} receipts missing (target p99 ≤ 250 ms, none missing)")
    run_cpu = statistics.median(lecture_["run_cpu_s"] for lecture_ in lectures)
    steps_cpu = statistics.median(lecture_["steps_cpu_s"] for lecture_ in lectures)
    print(f"  server CPU (median): {run_cpu:.2f} s for the run's events to {n} followers, "
          f"{steps_cpu:.2f} s for {steps} steps")
    return p99, run_cpu, steps_cpu


def checkout(ref: str, into: Path) -> Path:
    """The tree of commit `ref` written into `into` (git archive: no worktree, nothing to clean up in .git)."""
    archive = subprocess.run(["git", "archive", ref], cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--followers", type=int, default=500)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--baseline", help="a commit to compare with (e.g. the one before a change)")
    parser.add_argument("--rounds", type=int, default=1, help="lectures per side, alternating which goes first")
    args = parser.parse_args()
    with ExitStack() as stack:
        data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        repos = {"this checkout": REPO}
        if args.baseline:
            repos[f"baseline {args.baseline}"] = checkout(
                args.baseline, Path(stack.enter_context(tempfile.TemporaryDirectory())))
        servers = {}
        for side, repo in repos.items():
            servers[side] = LiveServer(data_dir, repo=repo)
            stack.callback(servers[side].stop)
            servers[side].start()
        lectures: dict[str, list[dict]] = {side: [] for side in servers}
        for round_ in range(args.rounds):
            order = list(servers.items())
            for side, server in order if round_ % 2 == 0 else order[::-1]:
                lectures[side].append(asyncio.run(lecture(server, args.followers, args.steps)))
        results = {side: report(side, args.followers, args.steps, done) for side, done in lectures.items()}
        if args.baseline:
            ours, theirs = results["this checkout"], results[f"baseline {args.baseline}"]
            names = ("p99", "server CPU for the run", "for the steps")
            print("this checkout / baseline: " + ", ".join(
                f"{what} {a / b:.2f}" if b else f"{what} -" for what, a, b in zip(names, ours, theirs)))


if __name__ == "__main__":
    main()
