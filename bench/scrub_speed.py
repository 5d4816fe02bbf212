"""Opening and scrubbing a recorded run on the lesson page: the seconds from navigation until the run's
last event is drawn; the main-thread time of one → or ← step, of a Home or End jump, of a move of the
scrubber to anywhere, and of one frame of a live run's events arriving, in headless Chromium (Debian's;
never `playwright install`). Targets (issue #16): open ≤ 1 s and every move ≤ 16 ms (median) on the
8-rank pp run (Interleaved1F1B, m = 32, v = 2, no delay: 7,351 events), on the biggest run a lesson
makes (8 ranks, InterleavedZeroBubble, m = 32, v = 4: about 17,000 events), and on a 22,000-event run: 8 ranks
of a program (the script lesson, bench/ring_rounds.py) doing a ring all-reduce by hand 48 times.

Each step is timed inside the page (tests/browser/scrub_timing.py): the key's handler, the frame that
draws it and the layout it forces; not the idle wait for that frame. With --baseline REF, the same runs
are also scrubbed on a server started from that commit (git archive), alternating with this checkout's,
and the ratio of the medians is printed: a shared, busy machine then weighs on both alike.
Usage: python bench/scrub_speed.py [--baseline REF] [--rounds 1] [--steps 100] [--jumps 10]
       [--opens 1] [--only NAME] [--profile OUT.cpuprofile] [--views] [--focus] [--data-dir DIR]
With --focus, the moves are made in the focus view (Z) of the run's first panel — a pp run's pipeline chart —
which never scrolls: without it a step scrolls the panel its event changes (the send/recv panel) into view.
With --data-dir, the runs are recorded there and reused by the next invocation given the same folder (recording the
three 8-rank runs takes minutes on a busy machine).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect, sync_playwright

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.browser.scrub_timing import (  # noqa: E402
    jump_actions, seek_actions, step_actions, summary, time_actions, time_parts)
from tests.conftest import LiveServer  # noqa: E402

RUNS = [  # (name, lesson, world size, params)
    ("tp_mlp (small)", "tp_mlp", 4, {}),
    ("pp 1f1b m=8", "pp", 4, {"microbatches": 8}),
    ("pp Interleaved1F1B v=2 m=8", "pp", 4, {"schedule": "Interleaved1F1B", "virtual_stages": 2, "microbatches": 8}),
    ("pp Interleaved1F1B v=2 m=16", "pp", 4, {"schedule": "Interleaved1F1B", "virtual_stages": 2, "microbatches": 16}),
    ("pp 8 ranks Interleaved1F1B v=2 m=32", "pp", 8,
     {"schedule": "Interleaved1F1B", "virtual_stages": 2, "microbatches": 32, "delay_ms": 0}),
    ("pp 8 ranks InterleavedZeroBubble v=4 m=32", "pp", 8,
     {"schedule": "InterleavedZeroBubble", "virtual_stages": 4, "microbatches": 32, "delay_ms": 0}),
    ("script 8 ranks ring all-reduce by hand x48", "script", 8,
     {"source": (REPO / "bench" / "ring_rounds.py").read_text(), "filename": "ring_rounds.py", "args": ["48"]}),
]
LIVE_EVENTS_PER_FRAME = 8   # a 4-rank pp run streams about 500-1000 events a second: 8-16 a frame
LIVE_MAX_EVENTS = 5000      # past this, the live frames are left out (thousands of frames per side)
RUN_TIME_LIMIT_S = "600"    # the biggest run takes longer than the default minute on a busy machine


def record(server: LiveServer, lesson: str, world_size: int, params: dict, limit_s: float = 900) -> dict:
    """The run, once finished (8 busy ranks on a loaded machine slow the server: a long limit)."""
    return server.wait_run(server.start_run(lesson, world_size, params)["id"], timeout=limit_s)


def open_recorded(page: Page, server: LiveServer, lesson: str, run: dict) -> float:
    """Open the run at its end; the seconds from navigation until its last event is drawn (the page's
    modules already cached, as for a lecturer who opened the lesson before)."""
    page.goto(f"{server.url}/lessons/{lesson}")
    expect(page.locator(".lesson-title")).not_to_be_empty()
    start = time.monotonic()
    page.goto(f"{server.url}/lessons/{lesson}?run={run['id']}")
    expect(page.locator("#scrubber .seq-counter")).to_have_text(f"seq {run['events']} / {run['events']}", timeout=600_000)
    page.evaluate("() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))")
    return time.monotonic() - start


def time_live(page: Page, server: LiveServer, lesson: str, run: dict) -> list[float]:
    """The run's events appended to a fresh store a few per frame, as a live run's arrive."""
    page.goto(f"{server.url}/lessons/{lesson}")
    expect(page.locator(".lesson-title")).not_to_be_empty()
    lines = httpx.get(f"{server.url}/api/runs/{run['id']}/events").text.splitlines()
    events = [json.loads(line) for line in lines if line]
    page.evaluate("(run) => window.paralab.store.load(run)", run)
    chunks = [events[i:i + LIVE_EVENTS_PER_FRAME] for i in range(0, len(events), LIVE_EVENTS_PER_FRAME)]
    return time_actions(page, [("append", chunk, True) for chunk in chunks])


def measure(page: Page, server: LiveServer, lesson: str, run: dict, steps: int, jumps: int,
            views: dict | None = None, opens: int = 1, focus: bool = False) -> dict[str, list[float]]:
    """Each kind of move's samples (ms) on `server`'s page of the recorded `run` (opened `opens` times); with
    `views`, each move's mean time by part of the drawing (the fold, each panel: window.paralab.timings) added to it;
    with `focus`, the moves are made in the focus view of the first panel (see the module's docstring)."""
    opened = [1000 * open_recorded(page, server, lesson, run) for _ in range(opens)]
    if focus:
        page.keyboard.press("z")
        expect(page.locator(".panel.focused")).to_have_count(1)
    total = run["events"]
    time_actions(page, step_actions(total, "ArrowRight", 20, bursts=2))          # warm the JIT
    moves = {
        "→": step_actions(total, "ArrowRight", steps),
        "←": step_actions(total, "ArrowLeft", steps),
        "End": jump_actions("End", jumps),
        "Home": jump_actions("Home", jumps),
        "scrubber": seek_actions(total, 2 * jumps),
    }
    samples = {"open": opened}
    for what, actions in moves.items():
        parts = time_parts(page, actions)
        samples[what] = [p["total"] for p in parts]
        if views is not None:
            by_view = views.setdefault(what, defaultdict(float))
            for p in parts:
                for view, ms in p.get("views", {}).items():
                    by_view[view] += ms / len(parts)
    if total <= LIVE_MAX_EVENTS:
        samples["live frame"] = time_live(page, server, lesson, run)
    return samples


def profile_steps(page: Page, server: LiveServer, lesson: str, run: dict, steps: int, out: Path) -> None:
    """A CPU profile (Chrome DevTools' .cpuprofile) of `steps` → steps, to open in DevTools' Performance panel."""
    open_recorded(page, server, lesson, run)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 200})
    cdp.send("Profiler.start")
    time_actions(page, step_actions(run["events"], "ArrowRight", steps))
    out.write_text(json.dumps(cdp.send("Profiler.stop")["profile"]))
    print(f"profile of {steps} steps on {lesson}: {out}")


def report(name: str, events: int, sides: dict[str, dict[str, list[float]]]) -> None:
    """One line per kind of move: each side's median and p95, and this checkout's median over the baseline's."""
    print(f"\n{name} — {events} events")
    print(" " * 20 + "".join(f"   | {side:<27}" for side in sides))
    for what in next(iter(sides.values())):
        stats = [summary(samples[what]) for samples in sides.values()]
        cells = "".join(f"   | median {r['median']:6.1f} p95 {r['p95']:6.1f} ms" for r in stats)
        ratio = f"   ratio {stats[0]['median'] / stats[1]['median']:.2f}" if len(stats) > 1 else ""
        print(f"  {what:<10} (n={stats[0]['n']:3d}){cells}{ratio}")


def report_views(views: dict[str, dict[str, dict[str, float]]], rounds: int) -> None:
    """Each side's mean milliseconds per move by part of the drawing, the four biggest (a baseline from before
    the page's timers has none)."""
    for side, moves in views.items():
        print(f"  by view, {side} (mean ms per move):")
        for what, by_view in moves.items():
            top = sorted(by_view.items(), key=lambda kv: -kv[1])[:4]
            print(f"    {what:<10} " + "  ".join(f"{view} {ms / rounds:.1f}" for view, ms in top))


def recorded(server: LiveServer, data_dir: Path, name: str, lesson: str, world_size: int, params: dict) -> dict:
    """The run `name` as recorded in `data_dir` by an earlier invocation, else recorded now (and noted there)."""
    index_path = data_dir / "scrub-speed-runs.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    if name in index:
        found = httpx.get(f"{server.url}/api/runs/{index[name]}", timeout=60)
        if found.status_code == 200 and found.json()["status"] == "done":
            return found.json()
    run = record(server, lesson, world_size, params)
    index_path.write_text(json.dumps({**index, name: run["id"]}))
    return run


def checkout(ref: str, into: Path) -> Path:
    """The tree of commit `ref` written into `into` (git archive: no worktree, nothing to clean up in .git)."""
    archive = subprocess.run(["git", "archive", ref], cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def started(stack: ExitStack, server: LiveServer) -> LiveServer:
    """`server` started, and stopped when `stack` closes."""
    stack.callback(server.stop)
    return server.start()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a commit to compare with (e.g. the one before a change)")
    parser.add_argument("--rounds", type=int, default=1, help="alternations of this checkout and the baseline per run")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--jumps", type=int, default=10)
    parser.add_argument("--opens", type=int, default=1, help="times each run is opened (the median is reported)")
    parser.add_argument("--only", help="measure only the runs whose name contains this")
    parser.add_argument("--profile", type=Path, help="also write a CPU profile of the steps on the 1,043-event run")
    parser.add_argument("--views", action="store_true", help="also print where each move's drawing went, view by view")
    parser.add_argument("--focus", action="store_true", help="make the moves in the focus view of the run's first panel")
    parser.add_argument("--data-dir", type=Path, help="record the runs here, or reuse those an earlier invocation recorded")
    args = parser.parse_args()
    with ExitStack() as stack:
        data_dir = args.data_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        data_dir.mkdir(parents=True, exist_ok=True)
        env = {"PARALAB_RUN_TIME_LIMIT_S": RUN_TIME_LIMIT_S}
        servers = {"this checkout": started(stack, LiveServer(data_dir, env=env))}
        server = servers["this checkout"]
        chosen = [(name, lesson, recorded(server, data_dir, name, lesson, world_size, params))
                  for name, lesson, world_size, params in RUNS if not args.only or args.only in name]
        for name, _, run in chosen:
            assert run["status"] == "done", (name, run)
        if args.baseline:     # started once the runs are recorded: a server reads the recorded runs' index when it starts
            tree = checkout(args.baseline, Path(stack.enter_context(tempfile.TemporaryDirectory())))
            servers[f"baseline {args.baseline}"] = started(stack, LiveServer(data_dir, env=env, repo=tree))
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        stack.callback(browser.close)
        page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        for name, lesson, run in chosen:
            sides = {side: defaultdict(list) for side in servers}
            views = {side: {} for side in servers}
            for round_ in range(args.rounds):
                order = list(servers.items())
                for side, on in order if round_ % 2 == 0 else order[::-1]:
                    found = measure(page, on, lesson, run, args.steps, args.jumps, views[side] if args.views else None,
                                    args.opens, args.focus)
                    for what, samples in found.items():
                        sides[side][what] += samples
            report(name, run["events"], sides)
            if args.views:
                report_views(views, args.rounds)
            if args.profile and "v=2 m=8" in name:
                profile_steps(page, server, lesson, run, args.steps, args.profile)


if __name__ == "__main__":
    main()
