"""A hang as a lecturer shows it at 1280×720: the header counts the quiet seconds towards the hang
timeout, the report names ranks in words, a rank that finished its program is not marked failed, and
the source panel scrolls a long line sideways with its line number kept in view."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import open_page

pytestmark = pytest.mark.browser


@pytest.fixture
def small_page(pages):
    yield from open_page(pages, 1280, 720)


def test_a_hang_counts_down_then_reports_in_words(small_page: Page, server):
    page = small_page
    page.goto(f"{server.url}/lessons/deadlock?bug=skip_collective&timeout_s=4&world_size=2")
    page.get_by_role("button", name="▶ Run").click()
    pill = page.locator("#run-status")
    expect(pill).to_contain_text(re.compile(r"no progress for [23] s — called hung at 4 s"))
    expect(pill).to_contain_text("Run failed", timeout=30_000)
    expect(pill).not_to_contain_text("no progress")
    sentence = page.locator("#failure .hang-sentence")
    expect(sentence).to_contain_text("Rank 0 waits in all_reduce")
    expect(sentence).to_contain_text("rank 1 never entered it")
    expect(sentence).not_to_contain_text("[")
    # rank 1 reached the end of its program: the run failed, rank 1 did not
    expect(page.locator('.lane[data-rank="1"] .lane-text')).to_have_text("finished")


def test_the_source_panel_scrolls_a_long_line_sideways(small_page: Page, server):
    page = small_page
    page.goto(f"{server.url}/lessons/deadlock")
    code = page.locator("#source .source-code")
    long_line = code.locator(".line", has_text="a healthy all-reduce").first
    expect(long_line).to_be_visible()
    sizes = code.evaluate("el => ({scroll: el.scrollWidth, client: el.clientWidth})")
    assert sizes["scroll"] > sizes["client"], "the deadlock program has a line longer than the panel at 1280 px"
    # every line is as wide as the longest (a highlight runs under all of it) ...
    assert long_line.evaluate("el => el.getBoundingClientRect().width") >= sizes["scroll"] - 1
    # ... and scrolled to the end, the line's last words are in view with its number still beside them
    code.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
    box = code.bounding_box()
    end = long_line.locator(".text").evaluate(
        "el => { const r = document.createRange(); r.selectNodeContents(el); return r.getBoundingClientRect().right; }")
    assert box["x"] < end <= box["x"] + box["width"] + 1
    number = long_line.locator(".num").bounding_box()
    assert box["x"] <= number["x"] < box["x"] + 40
