"""Run a command beside a two-node Ray cluster, all inside a namespace of its own: `unshare -n` (a
network with loopback only: Ray listens on every interface, and here the only one is 127.0.0.1) and
`-p -m` (a process tree of its own: `ray stop --force` sees only this cluster's processes, and
whatever is left when the command ends dies with the namespace).

    python3 tests/cluster/in_namespace.py -- COMMAND …     # exit status: the command's

Each node: 4 logical CPUs (the ranks' bundles), ports of its own; RAY_ADDRESS (the GCS) and
PARALAB_TEST_RAY_CLIENT (Ray Client's `ray://` address) are set for the command.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = str(Path(__file__).resolve().parents[2])

HEAD_PORT = 6399
CLIENT_PORT = 10001                  # Ray Client's server on the head: `--cluster ray://127.0.0.1:10001`
WORKER_NODE_MANAGER_PORT = 6411      # the second node's raylet: how a test finds it to kill it
CPUS_PER_NODE = 4

# A dead node is noticed in a few seconds, not Ray's default 15 s.
RAY_ENV = {"RAY_health_check_period_ms": "500", "RAY_health_check_failure_threshold": "6",
           "RAY_DEDUP_LOGS": "0", "RAY_USAGE_STATS_ENABLED": "0"}


def unshare_permitted() -> str | None:
    """None if a network + process namespace can be made here; else why not."""
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(["unshare", "-n", "-p", "-f", "-m", "--mount-proc", "true"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"unshare -n is not permitted here: {probe.stderr.strip()[:200]}"


def script(command: list[str], temp_dir: str) -> str:
    common = f"--num-cpus={CPUS_PER_NODE} --node-ip-address=127.0.0.1 --disable-usage-stats"
    return "\n".join([
        "ip link set lo up",
        # every node finds paralab where the server does (as a `pip install` would put it)
        f"export PYTHONPATH={shlex.quote(REPO)}${{PYTHONPATH:+:$PYTHONPATH}}",
        f"ray start --head --port={HEAD_PORT} {common} --include-dashboard=false --temp-dir={temp_dir} "
        f"--ray-client-server-port={CLIENT_PORT} --min-worker-port=20000 --max-worker-port=20999 >{temp_dir}/head.log 2>&1 || {{ cat {temp_dir}/head.log; exit 90; }}",
        f"ray start --address=127.0.0.1:{HEAD_PORT} {common} --node-manager-port={WORKER_NODE_MANAGER_PORT} "
        f"--min-worker-port=21000 --max-worker-port=21999 >{temp_dir}/worker.log 2>&1 || {{ cat {temp_dir}/worker.log; exit 91; }}",
        f"export RAY_ADDRESS=127.0.0.1:{HEAD_PORT} PARALAB_TEST_RAY_CLIENT=ray://127.0.0.1:{CLIENT_PORT}",
        f"{shlex.join(command)}",
        "status=$?",
        "ray stop --force >/dev/null 2>&1",
        "exit $status",
    ])


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1:] if "--" in argv else argv
    temp_dir = tempfile.mkdtemp(prefix="plr-", dir="/tmp")     # short: Ray's socket paths must fit 107 bytes
    try:
        env = {**os.environ, **RAY_ENV}
        return subprocess.run(["unshare", "-n", "-p", "-f", "-m", "--mount-proc", "bash", "-c", script(command, temp_dir)],
                              env=env).returncode
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
