"""`paralab` / `python -m app`: a subcommand (`paralab run …`), or with none (or `serve`) the server's
flags, then serve."""

from __future__ import annotations

import argparse
import importlib
import sys

from app.settings import Settings


def parse_settings(argv: list[str] | None = None) -> Settings:
    defaults = Settings()
    parser = argparse.ArgumentParser(prog="paralab", description="Serve the paralab live parallelism lab.")
    parser.add_argument("--host", default=defaults.HOST, help="address to listen on (default %(default)s)")
    parser.add_argument("--port", type=int, default=defaults.PORT, help="port (default %(default)s)")
    parser.add_argument("--data-dir", default=str(defaults.DATA_DIR), help="where runs are recorded")
    parser.add_argument("--backend", choices=["auto", "gloo", "nccl"], default=defaults.BACKEND,
                        help="process-group backend; auto picks NCCL when CUDA has one GPU per rank")
    parser.add_argument("--max-ranks", type=int, default=defaults.MAX_RANKS, help="largest world size allowed")
    parser.add_argument("--time-limit", type=float, default=defaults.RUN_TIME_LIMIT_S,
                        help="wall-clock limit of a run, seconds (default %(default)s)")
    parser.add_argument("--step-time-limit", type=float, default=defaults.STEP_TIME_LIMIT_S,
                        help="wall-clock limit of a run in step mode, seconds (default %(default)s)")
    parser.add_argument("--hang-timeout", type=float, default=defaults.HANG_TIMEOUT_S,
                        help="seconds without progress inside a collective before a run is called hung")
    parser.add_argument("--max-concurrent-runs", type=int, default=defaults.MAX_CONCURRENT_RUNS)
    parser.add_argument("--cluster", default=defaults.CLUSTER, metavar="ADDRESS",
                        help="place runs on a Ray cluster: ray://HOST:PORT, HOST:PORT, or auto (RAY_ADDRESS); "
                             "default: every rank on this machine")
    parser.add_argument("--log-level", default=defaults.LOG_LEVEL)
    parser.add_argument("--root-path", default=defaults.ROOT_PATH,
                        help="the path a proxy serves the pages under, stripped before it passes requests on "
                             "(jupyter-server-proxy: /user/NAME/paralab)")
    args = parser.parse_args(argv)
    return Settings(HOST=args.host, PORT=args.port, DATA_DIR=args.data_dir, BACKEND=args.backend,
                    MAX_RANKS=args.max_ranks, RUN_TIME_LIMIT_S=args.time_limit,
                    STEP_TIME_LIMIT_S=args.step_time_limit, HANG_TIMEOUT_S=args.hang_timeout,
                    MAX_CONCURRENT_RUNS=args.max_concurrent_runs, CLUSTER=args.cluster, LOG_LEVEL=args.log_level,
                    ROOT_PATH=args.root_path)


# Each subcommand is a module of its own with `main(argv) -> exit status`.
SUBCOMMANDS = {
    "run": "app.run_cli",           # paralab run FILE.py -n N [-- ARGS]: one's own script, traced
    "trace": "app.cli_trace",       # paralab trace -- torchrun …: a torchrun job streamed to a server
}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        sys.exit(importlib.import_module(SUBCOMMANDS[argv[0]]).main(argv[1:]))
    serve(argv[1:] if argv and argv[0] == "serve" else argv)


def serve(argv: list[str] | None = None) -> None:
    import uvicorn

    from app.as_init import serve_as_init_if_pid_1
    from app.main import create_app

    settings = parse_settings(argv)
    serve_as_init_if_pid_1()
    print(f"paralab: serving on http://{settings.HOST}:{settings.PORT}  (data in {settings.DATA_DIR})", flush=True)
    uvicorn.run(create_app(settings), host=settings.HOST, port=settings.PORT, log_level=settings.LOG_LEVEL,
                proxy_headers=False,                  # the app believes forwarded headers from PARALAB_TRUSTED_PROXIES only
                ws_max_size=settings.MAX_BODY_BYTES)


if __name__ == "__main__":
    main()
