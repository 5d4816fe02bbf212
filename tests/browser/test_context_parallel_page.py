"""Context parallelism as a learner walks it: run ring attention, step through the K/V blocks passing
around the ring, see which attention pairs each rank computed, every check passing; and Ulysses'
all-to-alls."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import drawn

pytestmark = pytest.mark.browser


def test_ring_attention_step_by_step(page: Page, server):
    page.goto(f"{server.url}/lessons/context_parallel?world_size=4")
    expect(page.locator(".lesson-title")).to_have_text("Context parallelism: ring attention and Ulysses")
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    expect(page.locator(".checks-summary")).to_have_text("✓ All 16 checks passed (4 checks × 4 ranks)")

    # From the start, the keys walk to the first pass of a K/V block around the ring.
    page.keyboard.press("Home")
    now = page.locator("#now")
    for _ in range(200):
        drawn(page)
        if "ring step 1" in now.inner_text():
            break
        page.keyboard.press("ArrowRight")
    expect(now).to_contain_text("ring step 1")
    expect(now).to_contain_text("K/V")

    # At the end: every rank's computed attention pairs, drawn in place in the S × S matrix.
    page.keyboard.press("End")
    expect(page.locator("#tensors")).to_contain_text("attention pairs")
    expect(page.locator("#explanation")).to_contain_text("zig-zag")


def test_ulysses_all_to_alls(page: Page, server):
    page.goto(f"{server.url}/lessons/context_parallel?world_size=2&method=ulysses")
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    expect(page.locator(".checks-summary")).to_have_text("✓ All 8 checks passed (4 checks × 2 ranks)")
    page.keyboard.press("Home")
    for _ in range(200):
        drawn(page)
        if re.search(r"all_to_all|all-to-all", page.locator("#now").inner_text()):
            break
        page.keyboard.press("ArrowRight")
    expect(page.locator("#now")).to_contain_text(re.compile("all_to_all|all-to-all"))
