"""The lesson, room and hosted-lab pages in Chinese: no interface text is left in English — every lesson's
own words (title, summary, parameter help, labels, check and metric names, from its texts.zh.json), the views'
sentences, the server's messages (a refused run, a hang report, a sign-in refused, a judge's reason), the
room's words, the lab's forms and tables — and back in English nothing is left in Chinese. What counts as
English is tests/browser/untranslated.py's (the lesson's and the problem's own words do not)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import counter, open_page
from tests.browser.untranslated import LESSONS, present, run_from_page, scrub_to, switch_to_chinese, untranslated
from tests.browser.untranslated_lab import LAB_ENV, audit_lab
from workers import sandbox

pytestmark = pytest.mark.browser

CHINESE = re.compile(r"[\u4e00-\u9fff]")


def assert_chinese(page: Page, server, place: str) -> None:
    left = untranslated(page, server.url)
    assert not left, f"English left on {place}:\n" + "\n".join(f"  {f.where}: {f.text!r}" for f in left)


@pytest.fixture
def follower(pages):
    yield from open_page(pages, 1200, 800, "the follower's page")


@pytest.fixture
def admin_page(pages):
    yield from open_page(pages, 1400, 900, "the admin's page")


def test_a_pipeline_run_and_a_refused_one_in_chinese(page: Page, server):
    run_from_page(page, server.url, "tp_mlp", 3, {"seq_len": 0}, wait=False)   # a 422: two rules broken
    expect(page.locator("#error-seq_len")).to_have_text("应大于或等于 1")
    expect(page.locator("#error-ffn")).to_have_text("ffn=64 必须能被 rank 数（3）整除")
    assert_chinese(page, server, "a refused run")

    run_from_page(page, server.url, "pp", 2, {"microbatches": 4})
    # a parameter is named as the program names it ("microbatches" is a word the interface translates too)
    expect(page.locator('label[for="param-microbatches"]')).to_have_text("microbatches")
    for fraction in (0.3, 0.6, 1.0):
        scrub_to(page, fraction)
        assert_chinese(page, server, f"pp at {fraction:.0%}")

    # Back in English, the views draw their sentences in English again.
    page.get_by_role("button", name=re.compile("English")).click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator(".stage")).not_to_contain_text(CHINESE)
    expect(page.locator("#run-status")).to_contain_text("Run done · ")


@pytest.mark.slow
@pytest.mark.parametrize("lesson, world_size, params", LESSONS, ids=[f"{l}-{w}-{'-'.join(map(str, p.values()))}" for l, w, p in LESSONS])
def test_every_lesson_in_chinese(page: Page, server, lesson, world_size, params):
    """Every lesson run in Chinese, looked at halfway and at its end: nothing in English, its own words included."""
    run_from_page(page, server.url, lesson, world_size, params)
    expect(page.locator(".lesson-title")).to_contain_text(CHINESE)
    for fraction in (0.5, 1.0):
        scrub_to(page, fraction)
        assert_chinese(page, server, f"{lesson} at {fraction:.0%}")


def test_a_hang_report_in_chinese(page: Page, server):
    run_from_page(page, server.url, "deadlock", 2, {"timeout_s": 1})
    expect(page.locator("#failure h2")).to_contain_text("运行卡住了")
    expect(page.locator(".hang-sentence")).to_contain_text("始终没有进入")
    assert_chinese(page, server, "the hang report")


def test_a_room_in_chinese(page: Page, follower: Page, server):
    page.goto(f"{server.url}/lessons/tp_mlp?world_size=2")
    switch_to_chinese(page)
    present(page)
    assert_chinese(page, server, "the presenter's room card")

    page.keyboard.press("Escape")
    page.locator(".run-button").click()
    expect(page.locator("#run-status")).to_have_attribute("data-status", "done", timeout=45_000)
    scrub_to(page, 0.5)
    assert_chinese(page, server, "the presenter's page mid-run")

    follower.goto(page.url)
    switch_to_chinese(follower)
    expect(follower.locator("#room-role")).to_have_text("正在跟随直播")
    expect(counter(follower)).to_have_text(counter(page).inner_text())   # the run shown, at the presenter's event
    follower.keyboard.press("ArrowLeft")                          # exploring on their own
    expect(follower.locator("#room-role")).to_have_text("正在自己探索")
    expect(follower.locator("#room-where")).to_have_text(re.compile(r"^演示者在第 \d+ 个事件$"))
    assert_chinese(follower, server, "the follower's page, exploring")


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")
def test_the_hosted_lab_in_chinese(server_factory, page: Page, admin_page: Page):   # the server outlives the pages
    """Sign-in (a wrong password, the limit), the problems, the password menu, a problem judged (queued,
    cancelled, refused, failed, passed), a student's refused run, the admin page and its dialogs, and every
    hosted-lab message of the server: nothing in English (tests/browser/untranslated_lab.py)."""
    lab = server_factory(env=LAB_ENV)
    report = audit_lab(page, admin_page, lab.url)
    left = [f"{place}: {f.where}: {f.text!r}" for place, findings in report.items() for f in findings]
    assert not left, "English left in the hosted lab:\n  " + "\n  ".join(left)

    # Back in English, the verdict, the checks and the history are drawn in English again.
    page.get_by_role("button", name=re.compile("English")).click()
    expect(page.locator(".verdict-status")).to_have_text("Passed — all 3 checks")     # sum, communication, traffic
    expect(page.locator(".check-list")).not_to_contain_text(CHINESE)
    expect(page.locator(".history")).not_to_contain_text(CHINESE)
    expect(page.locator(".history li").first).to_contain_text("passed")


def test_a_lesson_text_lost_on_the_way_leaves_the_page_working_in_chinese(page: Page, server):
    """The lesson's texts are fetched again in the new language; a connection that drops then is no
    page error (the `page` fixture fails on one): the words switch, the explanation stays as it was."""
    page.goto(f"{server.url}/lessons/collectives")
    expect(page.locator(".run-button")).to_be_enabled()
    explanation = page.locator("#explanation").inner_text()
    page.route("**/api/lessons/collectives?lang=zh", lambda route: route.abort())
    with page.expect_event("requestfailed", lambda r: "/api/lessons/collectives?lang=zh" in r.url):
        page.locator('[data-action="lang"][data-lang="zh"]').click()
    expect(page.locator(".run-button")).not_to_have_text("▶ Run")
    assert page.locator("#explanation").inner_text() == explanation
