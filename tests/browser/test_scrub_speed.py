"""Scrubbing stays quick on a big run: a → or ← step on the 1,043-event pipeline run (Interleaved1F1B,
v = 2, m = 8, 4 ranks) is drawn well within a lecturer's key repeat. bench/scrub_speed.py measures the
same more thoroughly. The bound is loose for a loaded 2-core machine: with another browser suite running
beside it, a step took 90–105 ms (median) before the views redrew in place, and 24–29 ms after."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.scrub_timing import step_actions, summary, time_actions

pytestmark = pytest.mark.browser

MEDIAN_BOUND_MS = 80
PARAMS = {"schedule": "Interleaved1F1B", "virtual_stages": 2, "microbatches": 8}


def test_a_step_on_a_big_pipeline_run_is_quick(page: Page, server):
    run = server.run("pp", 4, PARAMS)
    assert run["status"] == "done", run["error"]
    assert run["events"] > 1000, run["events"]
    page.goto(f"{server.url}/lessons/pp?run={run['id']}")
    expect(page.locator("#scrubber .seq-counter")).to_have_text(f"seq {run['events']} / {run['events']}")
    time_actions(page, step_actions(run["events"], "ArrowRight", 10, bursts=2))          # warm up
    forward = summary(time_actions(page, step_actions(run["events"], "ArrowRight", 60, bursts=6)))
    back = summary(time_actions(page, step_actions(run["events"], "ArrowLeft", 60, bursts=6)))
    assert forward["median"] < MEDIAN_BOUND_MS, f"→ steps: {forward}"
    assert back["median"] < MEDIAN_BOUND_MS, f"← steps: {back}"
