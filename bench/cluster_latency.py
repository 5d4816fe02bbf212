"""POST /api/runs → the run's last event on the websocket, for tp_mlp at 4 ranks: placed on a two-node
Ray cluster (`--cluster`, ranks spread over both nodes) against the embedded default (every rank forked
by the local warm launcher), both measured in the same run, alternating. Prints each median and the
ratio (goal: ≤ 2×).

The cluster runs inside a namespace of its own (tests/cluster/in_namespace.py: `unshare -n`, loopback
only, as root): run without RAY_ADDRESS, this script re-executes itself in there.
Usage: python bench/cluster_latency.py [--repeats 5] [--world-size 4]
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
from pathlib import Path

import httpx
import websockets

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.conftest import LiveServer  # noqa: E402  the same real server the tests use


async def once(server: LiveServer, world_size: int, placement: str | None) -> float:
    body = {"lesson": "tp_mlp", "world_size": world_size, **({"placement": placement} if placement else {})}
    async with httpx.AsyncClient(timeout=30) as client:
        start = time.perf_counter()
        run = (await client.post(server.url + "/api/runs", json=body)).json()
        async with websockets.connect(f"{server.ws_url}/ws/runs/{run['id']}") as ws:
            while True:
                event = json.loads(await ws.recv())
                if event["kind"] == "run" and event["status"] in ("done", "failed", "cancelled"):
                    assert event["status"] == "done", event
                    return time.perf_counter() - start


def measure(args) -> None:
    with tempfile.TemporaryDirectory() as embedded_dir, tempfile.TemporaryDirectory() as cluster_dir:
        embedded = LiveServer(Path(embedded_dir)).start()
        cluster = LiveServer(Path(cluster_dir), "--cluster", os.environ["RAY_ADDRESS"]).start(timeout=400)
        try:
            asyncio.run(once(embedded, args.world_size, None))       # warm-up, not counted
            asyncio.run(once(cluster, args.world_size, "spread"))
            ours, peer = [], []
            for _ in range(args.repeats):
                ours.append(asyncio.run(once(cluster, args.world_size, "spread")))
                peer.append(asyncio.run(once(embedded, args.world_size, None)))
        finally:
            cluster.stop()
            embedded.stop()
    m_ours, m_peer = statistics.median(ours), statistics.median(peer)
    print(f"Ray cluster, 2 nodes, spread, tp_mlp {args.world_size} ranks: median {m_ours * 1000:.0f} ms "
          f"(runs: {', '.join(f'{x * 1000:.0f}' for x in ours)})")
    print(f"embedded default, one machine:                median {m_peer * 1000:.0f} ms "
          f"(runs: {', '.join(f'{x * 1000:.0f}' for x in peer)})")
    print(f"ratio cluster / embedded = {m_ours / m_peer:.2f}  (goal ≤ 2)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--world-size", type=int, default=4)
    args = parser.parse_args()
    if "RAY_ADDRESS" in os.environ:
        measure(args)
        return
    sys.exit(subprocess.run([sys.executable, str(REPO / "tests" / "cluster" / "in_namespace.py"), "--",
                             sys.executable, *sys.argv], cwd=REPO).returncode)


if __name__ == "__main__":
    main()
