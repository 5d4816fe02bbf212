"""The focus view: one picture panel fills the window above the scrubber, in larger type, and the keys
still step through the run; Z enters and leaves it, Esc leaves it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import counter

pytestmark = pytest.mark.browser

FOCUSED = re.compile(r"\bfocused\b")


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)])
def test_a_focused_panel_fills_the_screen_and_keys_still_step(sized_page, server, size):
    run = server.run("collectives", 4)
    assert run["status"] == "done", run["error"]
    page: Page = sized_page(*size)
    page.goto(f"{server.url}/lessons/collectives?run={run['id']}")
    seq_counter = counter(page)
    expect(seq_counter).to_have_text(f"seq {run['events']} / {run['events']}")
    panel = page.locator("#collective-panel")
    small_font = panel.evaluate("p => parseFloat(getComputedStyle(p).fontSize)")

    panel.get_by_role("button", name="Focus").click()
    expect(panel).to_have_class(FOCUSED)
    box = panel.bounding_box()
    scrubber = page.locator("#scrubber").bounding_box()
    assert box["x"] == 0 and box["y"] == 0 and box["width"] == size[0], box
    assert box["y"] + box["height"] <= scrubber["y"] + 1, (box, scrubber)     # the scrubber stays in view below it
    assert panel.evaluate("p => parseFloat(getComputedStyle(p).fontSize)") > 1.2 * small_font
    picture = page.locator("#collective svg").first
    expect(picture).to_be_in_viewport()
    page.keyboard.press("ArrowLeft")                                           # keys still step
    expect(seq_counter).to_have_text(f"seq {run['events'] - 1} / {run['events']}")
    on_top = page.evaluate(f"() => document.elementFromPoint({size[0] // 2}, {size[1] // 3}).closest('.panel')?.id")
    assert on_top == "collective-panel", on_top                               # the other panels are under it
    page.keyboard.press("Escape")
    expect(panel).not_to_have_class(FOCUSED)
    page.keyboard.press("z")                                                   # Z: the panel focused last
    expect(panel).to_have_class(FOCUSED)
    page.keyboard.press("z")
    expect(page.locator(".panel.focused")).to_have_count(0)
