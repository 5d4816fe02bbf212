"""`paralab run FILE.py -n N [--step] [--server URL] [-- ARGS]`: run one's own torch.distributed script
on N fresh ranks of a paralab server, print the page that shows it, and exit with the script's status.

With no `--server`, it uses the server on 127.0.0.1 (PARALAB_PORT, else 8000), and starts one there
(in the background, serving on after this command ends) when none answers. The run is the `script`
lesson (workers/lessons/script): the server gives each rank torchrun's environment.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx

from app.settings import REPO_ROOT, Settings

FINAL = ("done", "failed", "cancelled")
EXIT_STATUS = re.compile(r"exited with status (\d+)")
START_TIMEOUT_S = 180          # torch's import on a busy machine


@functools.cache
def http() -> httpx.Client:
    """One client for the command's calls: `httpx.get()` builds a TLS context each time (~50 ms of
    CPU), and the command asks for its run's state five times a second."""
    return httpx.Client()


class CommandError(Exception):
    """A sentence for the user; the command exits with status 2."""


def parse(argv: list[str]) -> argparse.Namespace:
    own, script_args = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(prog="paralab run", description=(
        "Run a torch.distributed script unchanged on N fresh ranks, traced; print the page that shows "
        "it; exit with the script's status. Arguments after -- go to the script."))
    parser.add_argument("file", type=Path, help="the script (.py)")
    parser.add_argument("-n", "--nproc", type=int, default=2, help="number of ranks (default %(default)s)")
    parser.add_argument("--step", action="store_true", help="start in step mode: every rank waits before each call")
    parser.add_argument("--server", help="a running paralab server's address (default: the one on 127.0.0.1, "
                                         "started if none is running)")
    parser.add_argument("--port", type=int, default=Settings().PORT, help="port of the local server (default %(default)s)")
    parser.add_argument("--hang-timeout", type=float, help="seconds without progress in a collective before "
                                                           "the run is called hung (default: the server's)")
    args = parser.parse_args(own)
    args.script_args = script_args
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv or [])
    try:
        source = read_script(args.file)
        url = args.server.rstrip("/") if args.server else local_server(args.port)
        run = start(url, args, source)
    except CommandError as exc:
        print(f"paralab run: {exc}", file=sys.stderr)
        return 2
    print(f"paralab: {run['world_size']} ranks running {args.file.name}: {url}/playground?run={run['id']}", flush=True)
    if args.step:
        print("paralab: step mode: every rank waits before each call; step it on the page", flush=True)
    try:
        run = wait(url, run["id"])
    except KeyboardInterrupt:
        http().delete(f"{url}/api/runs/{run['id']}", timeout=10)
        print("paralab: cancelled", file=sys.stderr)
        return 130
    report(url, run)
    return exit_status(run)


def read_script(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        raise CommandError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None


def is_paralab(url: str) -> bool:
    try:
        health = http().get(f"{url}/healthz", timeout=2).json()
    except (httpx.HTTPError, ValueError):
        return False
    return isinstance(health, dict) and health.get("status") == "ok" and "launcher" in health


def local_server(port: int) -> str:
    """The paralab server on 127.0.0.1:port; one started in the background when none answers."""
    url = f"http://127.0.0.1:{port}"
    if is_paralab(url):
        return url
    data_dir = Settings().DATA_DIR
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / "server.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    with open(log, "ab") as out:
        server = subprocess.Popen([sys.executable, "-m", "app", "--port", str(port)], cwd=REPO_ROOT, env=env,
                                  stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)      # it serves on after this command
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise CommandError(f"the server could not start on port {port} (is the port taken? see {log}, "
                               f"or pass --port or --server)")
        if ready(url):
            print(f"paralab: started a server at {url} (pid {server.pid}; it keeps serving: `kill {server.pid}` "
                  f"stops it; log in {log})", flush=True)
            return url
        time.sleep(0.2)
    raise CommandError(f"the server started at {url} did not become ready in {START_TIMEOUT_S} s (see {log})")


def ready(url: str) -> bool:
    try:
        return http().get(f"{url}/healthz", timeout=2).json().get("launcher") == "ready"
    except (httpx.HTTPError, ValueError):
        return False


def start(url: str, args: argparse.Namespace, source: str) -> dict:
    body = {"lesson": "script", "world_size": args.nproc, "step": args.step,
            "params": {"source": source, "filename": args.file.name, "args": args.script_args}}
    if args.hang_timeout is not None:
        body["hang_timeout_s"] = args.hang_timeout
    try:
        response = http().post(f"{url}/api/runs", json=body, timeout=30)
    except httpx.HTTPError as exc:
        raise CommandError(f"cannot reach the server at {url}: {exc}") from None
    if response.status_code != 201:
        raise CommandError(f"the server refused the run ({response.status_code}): {refusal(response)}")
    return response.json()


def refusal(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        return response.text[:500]
    if isinstance(detail, list):
        return "; ".join(f"{'.'.join(str(p) for p in e.get('loc', [])[1:])}: {e.get('msg')}" for e in detail)
    return str(detail)


def wait(url: str, run_id: str) -> dict:
    while True:
        run = http().get(f"{url}/api/runs/{run_id}", timeout=30).json()
        if run["status"] in FINAL:
            return run
        time.sleep(0.2)


def report(url: str, run: dict) -> None:
    """Each rank's output (its tail), then how the run ended."""
    events = http().get(f"{url}/api/runs/{run['id']}/events", timeout=30).text.splitlines()
    for event in map(json.loads, events):
        if event.get("kind") == "log" and event.get("level") == "output":
            dropped = f" (the first {event['dropped_bytes']:,} bytes not kept)" if event.get("dropped_bytes") else ""
            print(f"---- rank {event['rank']} printed{dropped}:")
            print(event["output"], end="" if event["output"].endswith("\n") else "\n")
    error = run.get("error") or {}
    if run["status"] == "done":
        print("paralab: done", flush=True)
        return
    where = f" at {error['site']}" if error.get("site") else ""
    print(f"paralab: {run['status']}: {error.get('message', '')}{where}", file=sys.stderr)
    if error.get("traceback"):
        print(error["traceback"], file=sys.stderr, end="")


def exit_status(run: dict) -> int:
    """0 when it ran to the end; a failed rank's own exit status where it gave one; else 1."""
    if run["status"] == "done":
        return 0
    found = EXIT_STATUS.search((run.get("error") or {}).get("message", ""))
    return int(found.group(1)) if found else 1
