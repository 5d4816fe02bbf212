"""The hosted lab keeps a learner's progress per account: what was done in one browser before
signing in is merged into the account, a question opened there is saved, and a second browser
signed in as the same learner shows the same progress on the index."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import open_page
from tests.browser.sign_in import submit_sign_in

pytestmark = pytest.mark.browser

ADA = {"name": "ada", "password": "ada-pass-1"}


@pytest.fixture
def lab(server_factory):
    live = server_factory(env={"PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": "admin-secret-1",
                               "PARALAB_SECRET_KEY": "test-key"})
    with httpx.Client(base_url=live.url) as admin:
        assert admin.post("/api/auth/login", json={"name": "admin", "password": "admin-secret-1"}).status_code == 200
        assert admin.post("/api/admin/users", json=ADA).status_code == 201
    return live


def sign_in_as_ada(page, url: str) -> None:
    page.goto(url + "/login")
    submit_sign_in(page, ADA["name"], ADA["password"])
    page.wait_for_url(lambda u: "/login" not in u)


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
