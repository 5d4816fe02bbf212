"""A judged submission links to its run (issue #16, point 8): a student submits a wrong FSDP wrapper
(an all-reduce where the reduce-scatter belongs), follows the verdict's "Step through this run" to
the playground's page in replay (from its first event, titled as the submission it is), and steps to
the failing collective, on their own line."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.sign_in import sign_in
from tests.problems.wrong import wrong_solution
from workers import sandbox
from tests.browser.conftest import counter

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")]
WRONG = wrong_solution("fsdp_wrapper/all_reduce_then_slice")


@pytest.fixture
def lab(server_factory):
    live = server_factory(env={"PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": "admin-secret-1",
                               "PARALAB_SECRET_KEY": "test-key"})
    with httpx.Client(base_url=live.url) as admin:
        assert admin.post("/api/auth/login", json={"name": "admin", "password": "admin-secret-1"}).status_code == 200
        assert admin.post("/api/admin/classes", json={"name": "cs101"}).status_code == 201
        assert admin.post("/api/admin/users", json={"name": "ada", "password": "ada-pass-1", "class": "cs101"}).status_code == 201
    return live


@pytest.mark.timeout(300)          # the judge's four sandboxed ranks, on a loaded two-core machine
def test_a_wrong_submission_links_to_its_run_stepped_to_the_failing_collective(lab, page):
    sign_in(page, lab.url + "/problems/fsdp_wrapper", "ada", "ada-pass-1")
    editor = page.locator(".editor-input")
    expect(editor).to_have_value(re.compile("def reduce_gradients"))       # the starter, once the page is built
    editor.fill(WRONG)
    page.click('[data-action="submit"]')
    page.locator('.verdict-status[data-state="failed"]').wait_for(timeout=180_000)
    link = page.locator(".verdict-run a")
    expect(link).to_have_text("Step through this run")

    with page.context.expect_page() as opened:
        link.click()
    replay = opened.value
    run_id = re.search(r"run=([\w-]+)", replay.url).group(1)
    log = events_of(lab, run_id)
    expect(counter(replay)).to_have_text(f"seq 1 / {len(log)}", timeout=30_000)       # from its start
    expect(replay.locator(".source-tab")).to_have_text(["submission.py"])
    expect(replay.locator(".lesson-title")).to_have_text("Your submission, as the judge ran it")   # not "Your own program"

    failing = next(e for e in log if e["kind"] == "collective" and e["op"] == "all_reduce" and e["phase"] == "begin")
    replay.keyboard.press("Home")
    for _ in range(failing["seq"] - log[0]["seq"]):
        replay.keyboard.press("ArrowRight")
    expect(counter(replay)).to_have_text(re.compile(rf"\b{failing['seq']} /"))
    expect(replay.locator(".source-code .line.current")).to_contain_text("dist.all_reduce(total, group=group)")
    expect(replay.locator(".source-where")).to_contain_text(failing["site"])
    expect(replay.locator("#collective-panel")).to_contain_text("all_reduce")


def events_of(live, run_id: str) -> list[dict]:
    """The run's log as its owner reads it (the run is ada's: the API needs her session)."""
    with httpx.Client(base_url=live.url) as ada:
        assert ada.post("/api/auth/login", json={"name": "ada", "password": "ada-pass-1"}).status_code == 200
        response = ada.get(f"/api/runs/{run_id}/events")
        assert response.status_code == 200, response.text
        return [json.loads(line) for line in response.text.splitlines()]
