"""`paralab trace [--server URL] -- torchrun … script.py …`: run a job, unchanged, with every rank traced
into a paralab server, where the job shows as one live run (docs/torchrun.md).

It puts workers/job_hook first on PYTHONPATH (its sitecustomize traces each rank as it starts) and
PARALAB_SERVER in the environment, then becomes the command: the exit status is the job's. A server
that does not answer is said, and the job runs anyway (its events are dropped, counted).
`paralab trace --env` prints those variables instead, for jobs started another way; or
`paralab trace --install-hook` writes a .pth file into this Python's site-packages, after which
PARALAB_SERVER alone traces the ranks of any job run with that Python.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import urllib.request
from pathlib import Path

from app.settings import Settings

REPO_ROOT = Path(__file__).resolve().parent.parent
HOOK_DIR = REPO_ROOT / "workers" / "job_hook"
PTH_NAME = "paralab_trace.pth"


def parse(argv: list[str]) -> argparse.Namespace:
    defaults = Settings()
    parser = argparse.ArgumentParser(prog="paralab trace", description=(
        "Run a torchrun job (or any command whose Python processes are torch.distributed ranks) with every "
        "rank traced into a paralab server: paralab trace -- torchrun --nproc-per-node=2 train.py"))
    parser.add_argument("--server", default=os.environ.get("PARALAB_SERVER") or f"http://127.0.0.1:{defaults.PORT}",
                        help="the paralab server's address (default: $PARALAB_SERVER, else %(default)s)")
    parser.add_argument("--token", default=os.environ.get("PARALAB_TOKEN"),
                        help="the server's trace token, if it has one (PARALAB_TRACE_TOKEN there)")
    parser.add_argument("--env", action="store_true", help="print the variables to export instead of running")
    parser.add_argument("--install-hook", action="store_true", help=(
        f"write {PTH_NAME} into this Python's site-packages (or --site-dir): then PARALAB_SERVER alone traces a rank"))
    parser.add_argument("--uninstall-hook", action="store_true", help=f"remove {PTH_NAME} again")
    parser.add_argument("--site-dir", help="the site-packages directory for --install-hook / --uninstall-hook")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command, e.g. torchrun … script.py")
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not (args.env or args.install_hook or args.uninstall_hook) and not args.command:
        parser.error("give the command to run after --, e.g. paralab trace -- torchrun --nproc-per-node=2 train.py")
    return args


def job_environment(server: str, token: str | None, environ=os.environ) -> dict[str, str]:
    """The variables that make each rank of the job trace itself into `server`."""
    path = [str(HOOK_DIR), *[p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env = {"PARALAB_SERVER": server, "PYTHONPATH": os.pathsep.join(path)}
    if token:
        env["PARALAB_TOKEN"] = token
    return env


def pth_line(root: Path = REPO_ROOT) -> str:
    """The .pth line: in a process that is a rank (RANK set) with PARALAB_SERVER set, paralab's root
    goes at the end of sys.path and the rank is traced; anywhere else it costs two lookups."""
    return (f'import os, sys; (os.environ.get("PARALAB_SERVER") and "RANK" in os.environ) and '
            f'(sys.path.append({str(root)!r}) or __import__("workers.traced_job", fromlist=["*"]).trace_this_rank())\n')


def install_hook(site_dir: str | None, remove: bool = False) -> int:
    import site
    directory = Path(site_dir or site.getsitepackages()[0])
    target = directory / PTH_NAME
    try:
        if remove:
            target.unlink(missing_ok=True)
            print(f"paralab: removed {target}")
        else:
            target.write_text(pth_line())
            print(f"paralab: wrote {target}: with PARALAB_SERVER set, the ranks of any job this Python runs are traced")
    except OSError as exc:
        print(f"paralab trace: cannot write in {directory} ({exc}); give a site-packages you may write with --site-dir",
              file=sys.stderr)
        return 1
    return 0


def server_answers(server: str) -> bool:
    try:
        with urllib.request.urlopen(server.rstrip("/") + "/healthz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.install_hook or args.uninstall_hook:
        return install_hook(args.site_dir, remove=args.uninstall_hook)
    env = job_environment(args.server, args.token)
    if args.env:
        for name, value in env.items():
            print(f"export {name}={shlex.quote(value)}")
        return 0
    if not server_answers(args.server):
        print(f"paralab: no server answers at {args.server}: the job runs, and its ranks count the events they "
              "drop (start one with `paralab`)", file=sys.stderr, flush=True)
    else:
        print(f"paralab: tracing {shlex.join(args.command)} into {args.server}", file=sys.stderr, flush=True)
    try:
        os.execvpe(args.command[0], args.command, {**os.environ, **env})
    except OSError as exc:
        print(f"paralab trace: cannot run {args.command[0]!r}: {exc}", file=sys.stderr)
        return 127
