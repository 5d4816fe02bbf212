"""POST /api/runs → the run's last event on the websocket, for tp_mlp at 4 ranks, against
`torchrun --nproc_per_node=4` running the same computation as a plain script (bench/plain_tp_mlp.py).

Alternates the two, N times each, and prints each median and the ratio (budget: ≤ 0.1).
Usage: python bench/run_latency.py [--repeats 5] [--world-size 4]
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
from tests.conftest import LiveServer, free_port  # noqa: E402  the same real server the tests use


async def paralab_once(server: LiveServer, world_size: int) -> float:
    async with httpx.AsyncClient() as client:
        start = time.perf_counter()
        response = await client.post(server.url + "/api/runs", json={"lesson": "tp_mlp", "world_size": world_size})
        run = response.json()
        async with websockets.connect(f"{server.ws_url}/ws/runs/{run['id']}") as ws:
            while True:
                event = json.loads(await ws.recv())
                if event["kind"] == "run" and event["status"] in ("done", "failed", "cancelled"):
                    elapsed = time.perf_counter() - start
                    assert event["status"] == "done", event
                    return elapsed


def torchrun_once(world_size: int) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={world_size}",
                    "--master_addr=127.0.0.1", f"--master_port={free_port()}",
                    str(REPO / "bench" / "plain_tp_mlp.py")],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--world-size", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        server = LiveServer(Path(data_dir)).start()
        try:
            asyncio.run(paralab_once(server, args.world_size))   # warm-up, not counted
            ours, peer = [], []
            for _ in range(args.repeats):
                ours.append(asyncio.run(paralab_once(server, args.world_size)))
                peer.append(torchrun_once(args.world_size))
        finally:
            server.stop()
    m_ours, m_peer = statistics.median(ours), statistics.median(peer)
    print(f"paralab POST→last websocket event, tp_mlp, {args.world_size} ranks: median {m_ours * 1000:.0f} ms "
          f"(runs: {', '.join(f'{x * 1000:.0f}' for x in ours)})")
    print(f"torchrun --nproc_per_node={args.world_size} plain script:         median {m_peer * 1000:.0f} ms "
          f"(runs: {', '.join(f'{x * 1000:.0f}' for x in peer)})")
    print(f"ratio paralab / torchrun = {m_ours / m_peer:.3f}  (budget ≤ 0.1)")


if __name__ == "__main__":
    main()
