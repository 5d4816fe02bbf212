"""The hosted lab keeps a learner's progress per account: what was done in one browser before
signing in is merged into the account, a question opened there is saved, and a second browser
signed in as the same learner shows the same progress on the index; on a shared machine the next
learner sees nothing of the last one's drafts or progress."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import open_page
from tests.browser.sign_in import submit_sign_in

pytestmark = pytest.mark.browser

ADA = {"name": "ada", "password": "ada-pass-1"}
BO = {"name": "bo", "password": "bo-pass-12"}


@pytest.fixture
def lab(server_factory):
    live = server_factory(env={"PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": "admin-secret-1",
                               "PARALAB_SECRET_KEY": "test-key"})
    with httpx.Client(base_url=live.url) as admin:
        assert admin.post("/api/auth/login", json={"name": "admin", "password": "admin-secret-1"}).status_code == 200
        assert admin.post("/api/admin/users", json=ADA).status_code == 201
        assert admin.post("/api/admin/users", json=BO).status_code == 201
    return live


def sign_in_as_ada(page, url: str, who: dict = ADA) -> None:
    page.goto(url + "/login")
    submit_sign_in(page, who["name"], who["password"])
    page.wait_for_url(lambda u: "/login" not in u)


def test_on_a_shared_machine_the_next_learner_sees_nothing_of_the_last(lab, page):
    """Ada's draft and progress stay hers: signing out forgets them in this browser, and Bo, signed in
    on the same machine after her (signed out or not), starts from the starter and from no progress."""
    progress = "fetch('/api/progress').then((r) => r.json()).then((p) => p.lessons)"
    for signs_out in (True, False):
        sign_in_as_ada(page, lab.url)
        page.evaluate("""localStorage.setItem("paralab:progress",
                         JSON.stringify({collectives: {ran: true, answered: [], questions: 0}}))""")
        page.goto(lab.url + "/")                                      # merged into Ada's account
        expect(page.locator('.lesson-card[data-card="collectives"] .lesson-progress')).to_have_text("✓ ran")
        page.goto(lab.url + "/problems/ring_allreduce")
        editor = page.locator(".editor-input")
        expect(editor).to_be_editable()
        editor.fill("def ring_allreduce(x):\n    return 'ada was here'\n")
        if signs_out:                                                   # from the course page, where learners land
            page.goto(lab.url + "/")
            page.locator('[data-action="sign-out"]').click()
            page.wait_for_url("**/login")
            assert page.evaluate("Object.keys(localStorage).filter((k) => k.startsWith('paralab:'))"
                                 ".filter((k) => /draft|progress/.test(k))") == []
        sign_in_as_ada(page, lab.url, BO)
        page.goto(lab.url + "/problems/ring_allreduce")
        expect(page.locator(".editor-input")).to_be_editable()
        assert "ada was here" not in page.locator(".editor-input").input_value()
        page.goto(lab.url + "/")
        expect(page.locator('.lesson-card[data-card="collectives"] .lesson-progress')).to_be_hidden()
        assert page.evaluate(progress) == {}, signs_out                 # nothing of Ada's in Bo's account
        page.context.clear_cookies()


def test_progress_follows_the_learner_to_another_browser(lab, pages):
    laptop_pages, phone_pages = open_page(pages, 1400, 900, "the laptop"), open_page(pages, 1400, 900, "the phone")
    laptop, phone = next(laptop_pages), next(phone_pages)

    laptop.goto(lab.url + "/login")                   # a run seen to its end here before signing in
    laptop.evaluate("""localStorage.setItem("paralab:progress",
                         JSON.stringify({collectives: {ran: true, answered: [], questions: 0}}))""")
    sign_in_as_ada(laptop, lab.url)
    laptop.goto(lab.url + "/lessons/collectives")
    questions = laptop.locator("#explanation details.self-check")
    expect(questions.first).to_be_attached()
    count = questions.count()
    with laptop.expect_response(lambda r: r.url.endswith("/api/progress") and r.request.method == "PUT" and r.ok):
        questions.first.locator("summary").click()

    sign_in_as_ada(phone, lab.url)
    phone.goto(lab.url + "/")
    card = phone.locator('.lesson-card[data-card="collectives"]')
    expect(card.locator(".lesson-progress")).to_have_text(f"✓ ran · 1 of {count} questions answered")
    expect(phone.locator('.lesson-card[data-card="tp_mlp"] .lesson-progress')).to_be_hidden()
    for opened in (laptop_pages, phone_pages):
        next(opened, None)
