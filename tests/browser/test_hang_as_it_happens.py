"""A hang as a lecturer shows it at 1280×720: the header counts the quiet seconds towards the hang
timeout, the report names ranks in words, a rank that finished its program is not marked failed, and
the source panel shows a long line whole."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import open_page

pytestmark = pytest.mark.browser


@pytest.fixture
def small_page(browser):
    yield from open_page(browser, 1280, 720)


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


def test_the_source_panel_wraps_a_long_line(small_page: Page, server):
    page = small_page
    page.goto(f"{server.url}/lessons/deadlock")
    code = page.locator("#source .source-code")
    expect(code.locator(".line").first).to_be_visible()
    overflow = code.evaluate("el => el.scrollWidth - el.clientWidth")
    assert overflow <= 1, f"the source panel hides {overflow}px of its lines to the right"
    long_line = code.locator(".line", has_text="a healthy all-reduce").first
    expect(long_line).to_contain_text("every rank calls it")
