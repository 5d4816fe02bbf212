"""The hosted lab in a browser: a student signs in, submits a wrong ring all-reduce (it adds into the
wrong chunk), sees the failing check with the values that differ, then the reference, and sees it pass."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.sign_in import sign_in, submit_sign_in
from tests.conftest import LiveServer
from tests.problems.wrong import wrong_solution
from workers import sandbox
from workers.problems import PROBLEMS

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One hosted lab for the module (a server start is the dearest thing here); each test signs in as a
    student of its own, so none sees another's submissions."""
    live = LiveServer(tmp_path_factory.mktemp("paralab-problems"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": "admin-secret-1", "PARALAB_SECRET_KEY": "test-key"}).start()
    with httpx.Client(base_url=live.url) as admin:
        assert admin.post("/api/auth/login", json={"name": "admin", "password": "admin-secret-1"}).status_code == 200
        assert admin.post("/api/admin/classes", json={"name": "cs101"}).status_code == 201
        for name in ("ada", "bea"):
            assert admin.post("/api/admin/users", json={"name": name, "password": f"{name}-pass-1", "class": "cs101"}).status_code == 201
    yield live
    live.stop()


def test_sign_in_submit_wrong_then_right_and_see_the_checks(lab, page):
    page.goto(lab.url + "/problems/ring_allreduce")
    page.wait_for_url("**/login?next=*")                     # a stranger is sent to sign in
    submit_sign_in(page, "ada", "wrong-password")
    page.wait_for_selector("#sign-in .lab-error:has-text('wrong name or password')")
    submit_sign_in(page, "ada", "ada-pass-1")
    page.wait_for_url("**/problems/ring_allreduce")
    page.wait_for_selector(".statement h1, .statement p")
    assert page.locator(".lab-user").inner_text().startswith("ada")
    editor = page.locator(".editor-input")
    assert "def ring_all_reduce" in editor.input_value()            # the starter code
    assert page.locator(".editor-highlight .py-kw").count() > 0     # highlighted
    starter = editor.input_value()
    editor.focus()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text("x = 'my work'\n")
    page.get_by_role("button", name="Starter code").click()          # the starter back, as an edit: undoable
    expect(editor).to_have_value(starter)
    page.keyboard.press("Control+Z")
    expect(editor).to_have_value("x = 'my work'\n")

    editor.fill(wrong_solution("ring_allreduce/chunk_index"))
    editor.press("Control+Enter")
    page.locator('.verdict-status[data-state="failed"]').wait_for(timeout=90_000)
    assert page.locator(".verdict-status").inner_text().startswith("Failed")
    failing = page.locator('.check.fail[data-check="sum"]')
    assert failing.count() == 1
    assert "rank" in failing.locator(".check-ranks").inner_text()
    rows = failing.locator("table.differences tbody tr")
    assert rows.count() >= 2
    assert failing.locator("table.differences th").all_inner_texts()[:2] == ["rank", "at"]
    cells = [row.locator("td").all_inner_texts() for row in rows.all()]
    first_failing_rank = re.search(r"\d+", failing.locator(".check-ranks").inner_text()).group()
    assert {rank for rank, *_ in cells} == {first_failing_rank}           # the rank the values are from
    indexes = [json.loads(index) for _, index, _, _ in cells]
    assert indexes == sorted(indexes), indexes                              # by index, not by error
    assert all(got != expected for _, _, got, expected in cells)

    editor.fill((REPO / "workers/problems/ring_allreduce/reference.py").read_text())
    page.click('[data-action="submit"]')
    page.locator('.verdict-status[data-state="passed"]').wait_for(timeout=90_000)
    assert page.locator(".verdict-status").inner_text().startswith("Passed")
    assert page.locator(".check.fail").count() == 0
    assert page.locator('.check.pass[data-check="sum"]').count() == 1
    assert page.locator('.check.pass[data-check="communication"]').count() == 1
    # one sentence for the check of every rank (it named rank 0's neighbour: "to rank 1", for ranks 0–3)
    expect(page.locator('[data-check="communication"] .check-detail')).to_contain_text("each rank to the next, rank + 1 mod p")
    assert page.locator(".history li").count() == 2

    # Another day: the last verdict is there, and the history's first line, the wrong one, with its code.
    page.reload()
    page.locator('.verdict-status[data-state="passed"]').wait_for()
    expect(page.locator(".verdict-code pre")).to_have_text((REPO / "workers/problems/ring_allreduce/reference.py").read_text())
    page.locator(".history .history-item").nth(1).click()
    page.locator('.verdict-status[data-state="failed"]').wait_for()
    expect(page.locator('.check.fail[data-check="sum"]')).to_have_count(1)
    expect(page.locator(".verdict-code pre")).to_have_text(wrong_solution("ring_allreduce/chunk_index"))

    # A submission reloaded while it waits or is judged is followed to its verdict.
    editor.fill((REPO / "workers/problems/ring_allreduce/reference.py").read_text())
    page.click('[data-action="submit"]')
    page.locator('.verdict-status:is([data-state="queued"], [data-state="judging"])').wait_for()
    page.reload()
    page.locator('.verdict-status:is([data-state="queued"], [data-state="judging"])').wait_for()
    expect(page.locator('[data-action="cancel"]')).to_be_visible()
    page.locator('.verdict-status[data-state="passed"]').wait_for(timeout=90_000)
    expect(page.locator(".history li")).to_have_count(3)


def test_a_new_problem_in_chinese_and_its_communication_failure_named(lab, page):
    """The FSDP-style wrapper, in Chinese: its own title, statement and function docs; an all-reduce
    where the reduce-scatter belongs fails the communication check, whose detail (in Chinese) names
    the call and the reference's, and shows the calls expected and performed."""
    from tests.browser.untranslated import switch_to_chinese
    sign_in(page, lab.url + "/problems/fsdp_wrapper", "ada", "ada-pass-1")
    statement = page.locator(".statement > :first-child")   # the statement's own heading: the title, shown once
    expect(statement).to_have_text(re.compile(r"^FSDP \(and ZeRO-3\) keeps only a shard"))
    expect(page.locator(".problem-statement h1")).to_have_text(re.compile("^An FSDP-style wrapper"))
    switch_to_chinese(page)
    page.wait_for_selector(".statement[lang=zh]")
    expect(statement).to_have_text(re.compile("^FSDP（以及 ZeRO-3）让每个 rank"))
    assert page.locator(".problem-statement h1").inner_text().startswith("FSDP 式的封装")
    assert page.locator(".functions li p").first.inner_text().startswith("前向之前")

    page.locator(".editor-input").fill(wrong_solution("fsdp_wrapper/all_reduce_then_slice"))
    page.click('[data-action="submit"]')
    page.locator('.verdict-status[data-state="failed"]').wait_for(timeout=90_000)
    failing = page.locator('.check.fail[data-check="communication"]')
    detail = failing.locator(".check-detail").inner_text()
    assert detail.startswith("前向之前一次分片的 all-gather")
    assert "call 2: all_reduce on dp of [512] where the reference makes reduce_scatter on dp of [512]" in detail
    assert "reduce_scatter on dp of [512]" in failing.locator("dl.communication dd").first.inner_text()
    assert page.locator('.check.pass[data-check="gradient shard"]').count() == 1


def test_a_deadlock_shows_the_seconds_while_judged_then_the_hang_report(lab, page):
    """A ring whose last rank skips its send/recv: while it is judged the page counts the seconds on
    4 ranks; the verdict is the hang report naming each rank, the call it waits in and its line."""
    sign_in(page, lab.url + "/problems/ring_allreduce", "bea", "bea-pass-1")
    code = (REPO / "tests/problems/deadlock_ring.py").read_text()
    send_line = next(n for n, line in enumerate(code.splitlines(), 1) if "dist.send(" in line)
    page.locator(".editor-input").fill(code)
    page.click('[data-action="submit"]')
    status = page.locator('.verdict-status[data-state="judging"]')
    status.wait_for(timeout=60_000)
    page.wait_for_function("/on 4 real ranks… [1-9]\\d* s/.test(document.querySelector('.verdict-status').textContent)",
                           timeout=30_000)
    page.locator('.verdict-status[data-state="failed"]').wait_for(timeout=120_000)
    report = page.locator(".verdict-reason").inner_text(timeout=60_000)
    assert report.startswith("the ranks are deadlocked: ranks 0, 1 and 2"), report
    assert f"rank 2: waits in send to rank 3 at your line {send_line}: dist.send(" in report
    assert "rank 3: finished its program" in report
    assert page.locator(".verdict-reason").bounding_box()["height"] > 4 * 14     # one line per rank
    # the traffic of ranks stopped inside calls was not compared: said so, and not counted as a pass
    expect(page.locator(".verdict-status")).to_have_text(re.compile(r"^Failed — 0 of 2 checks passed \(1 not compared\)$"))
    expect(page.locator('.check.skipped[data-check="traffic"] .check-badge')).to_have_text("NOT COMPARED")
    expect(page.locator(".check").filter(has_text="max abs error inf")).to_have_count(0)


def test_the_problem_list_shows_each_title_in_the_interfaces_language(lab, page):
    sign_in(page, lab.url + "/problems", "ada", "ada-pass-1")
    title = page.locator('[data-problem="ring_allreduce"] h2')
    assert title.inner_text() == "Ring all-reduce from send/recv"
    page.click('[data-action="lang"]')
    page.wait_for_function("document.documentElement.lang === 'zh-CN'")
    assert title.inner_text() == "用 send/recv 实现环形 all-reduce"
    assert title.get_attribute("lang") == "zh"
    for problem in PROBLEMS.values():                                       # every one has Chinese
        assert page.locator(f'[data-problem="{problem.id}"] h2').inner_text() == problem.texts()["zh"]["title"]
    page.click('[data-action="lang"]')
    page.wait_for_function("document.documentElement.lang === 'en'")
    assert title.inner_text() == "Ring all-reduce from send/recv"
