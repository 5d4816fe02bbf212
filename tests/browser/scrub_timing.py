"""Timing the lesson page's steps from inside the page: how long one key press (→, ←, Home, End) or one
batch of live events keeps the main thread busy until the step is drawn and laid out.

A step's cost = the key's handler (the store moves the cursor, the scrubber updates) + the frame that
draws it (the page's requestAnimationFrame render) + the style and layout that drawing forces. The wait
for that frame (up to one vsync, idle) is left out. Shared by bench/scrub_speed.py and the browser test.
"""

from __future__ import annotations

import random
import statistics

from playwright.sync_api import Page

# One sample per action: a callback registered before the action runs first in the frame that draws
# it (it notes the frame's start); one registered after runs after the page's render, then forces layout.
_TIME_ACTIONS_JS = """async ({ actions }) => {
  const nextFrame = () => new Promise((resolve) => requestAnimationFrame(resolve));
  const { store } = window.paralab;
  const run = {
    key: (key) => document.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true })),
    seek: (index) => store.seek(index < 0 ? store.state.log.length + index : index),
    append: (events) => store.append(events),
  };
  const samples = [];
  for (const [kind, arg, timed] of actions) {
    await nextFrame();
    await nextFrame();          // a drawing the last action left due (a resize) is done before this one starts
    let frameStart = 0;
    requestAnimationFrame(() => { frameStart = performance.now(); });
    const t0 = performance.now();
    run[kind](arg);
    const handled = performance.now() - t0;
    await nextFrame();
    const drawn = performance.now();
    document.body.getBoundingClientRect();
    const laidOut = performance.now();
    const views = Object.fromEntries(window.paralab.timings || []);   // the page's own per-part times (timings.js)
    if (timed) samples.push({ total: handled + laidOut - frameStart, handler: handled, draw: drawn - frameStart, layout: laidOut - drawn, views });
  }
  return samples;
}"""


def time_parts(page: Page, actions: list[tuple[str, object, bool]]) -> list[dict]:
    """Run `actions` — ("key", "ArrowRight", timed), ("seek", index, timed), ("append", [events], timed) —
    one per frame; returns each timed one's milliseconds: {total, handler, draw, layout, views}, `views` the
    page's drawing time by part (the fold, each panel drawn in that frame: window.paralab.timings)."""
    return page.evaluate(_TIME_ACTIONS_JS, {"actions": [list(a) for a in actions]})


def time_actions(page: Page, actions: list[tuple[str, object, bool]]) -> list[float]:
    """The total milliseconds of each timed action (see `time_parts`)."""
    return [sample["total"] for sample in time_parts(page, actions)]


def step_actions(total: int, key: str, steps: int, bursts: int = 10) -> list[tuple[str, object, bool]]:
    """`steps` presses of `key`, in `bursts` runs spread evenly over a log of `total` events (so the
    early, cheap steps and the late ones count alike); each burst starts from an untimed seek."""
    per_burst = max(1, steps // bursts)
    forward = key in ("ArrowRight", " ")
    actions: list[tuple[str, object, bool]] = []
    for b in range(bursts):
        start = round(b * (total - per_burst - 1) / max(1, bursts - 1))
        actions.append(("seek", start if forward else start + per_burst, False))
        actions += [("key", key, True)] * per_burst
    return actions


def jump_actions(key: str, jumps: int) -> list[tuple[str, object, bool]]:
    """`jumps` presses of Home or End, each timed from the other end of the log (an untimed seek)."""
    return [("seek", -1 if key == "Home" else 0, False), ("key", key, True)] * jumps


def seek_actions(total: int, seeks: int, seed: int = 0) -> list[tuple[str, object, bool]]:
    """`seeks` timed moves of the scrubber to places spread over a log of `total` events (a fixed shuffle)."""
    rng = random.Random(seed)
    return [("seek", rng.randrange(total), True) for _ in range(seeks)]


def summary(samples: list[float]) -> dict:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(samples), "median": statistics.median(samples), "p95": p95, "max": ordered[-1]}
