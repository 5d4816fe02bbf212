"""The hosted lab's account pages in a browser: a student changes their password from the menu under
their name (a wrong current one is refused and said so), cancels a submission while it is judged, and
sees the menu in Chinese; an admin resets a student's password and deletes a user from the admin page."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from tests import web
from tests.browser.sign_in import sign_in
from tests.conftest import LiveServer
from workers import sandbox

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")]

FOREVER = "import torch\n\n\ndef ring_all_reduce(x, rank, world):\n    while True:\n        pass\n"


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """One hosted lab for the module: ada changes her own password, the admin resets ned's and deletes zed."""
    live = LiveServer(tmp_path_factory.mktemp("paralab-accounts"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": "admin-secret-1", "PARALAB_SECRET_KEY": "test-key"}).start()
    with httpx.Client(base_url=live.url) as admin:
        assert admin.post("/api/auth/login", json={"name": "admin", "password": "admin-secret-1"}).status_code == 200
        for name in ("ada", "ned", "zed"):
            assert admin.post("/api/admin/users", json={"name": name, "password": f"{name}-pass-1"}).status_code == 201
    yield live
    live.stop()


@pytest.fixture
def lab(lab_server):
    """The module's lab, started again (same data) where a test before this one stopped it."""
    if lab_server.proc.poll() is not None:
        lab_server.start()
    return lab_server


def signs_in(lab, name: str, password: str) -> bool:
    return web.post(lab.url + "/api/auth/login", json={"name": name, "password": password}).status_code == 200


def test_a_student_changes_their_password_and_cancels_a_submission_being_judged(lab, page):
    sign_in(page, lab.url + "/problems/ring_allreduce", "ada", "ada-pass-1")
    page.locator(".lab-user").click()                                    # the menu under the name
    form = page.locator("#change-password")
    form.locator("input[name=current]").fill("not-my-password")
    form.locator("input[name=new]").fill("ada-pass-2")
    form.locator("button[type=submit]").click()
    expect(form.locator(".lab-error")).to_have_text("the current password is wrong")
    form.locator("input[name=current]").fill("ada-pass-1")
    form.locator("input[name=new]").fill("ada-pass-2")
    form.locator("button[type=submit]").click()
    expect(form.locator(".lab-done")).to_be_visible()
    expect(form.locator(".lab-error")).to_be_hidden()
    assert signs_in(lab, "ada", "ada-pass-2") and not signs_in(lab, "ada", "ada-pass-1")
    page.locator(".lab-user").click()                                    # closed again

    editor = page.locator(".editor-input")
    editor.fill(FOREVER)
    editor.press("Control+Enter")                                       # still signed in here
    cancel = page.locator('[data-action="cancel"]')
    page.locator('.verdict-status[data-state="judging"]').wait_for(timeout=60_000)
    cancel.click()
    page.locator('.verdict-status[data-state="cancelled"]').wait_for(timeout=10_000)
    expect(page.locator(".verdict-status")).to_have_text("Cancelled")
    expect(page.locator(".verdict-reason")).to_contain_text("being judged")
    expect(cancel).to_be_hidden()
    expect(page.locator(".history li").first).to_contain_text("cancelled")

    page.get_by_role("button", name=re.compile("中文")).click()
    page.locator(".lab-user").click()
    expect(page.locator("#change-password h2")).to_have_text("修改密码")
    expect(page.locator("#change-password button[type=submit]")).to_have_text("修改密码")
    expect(page.locator(".lab-signout")).to_have_text("退出登录")
    expect(page.locator(".verdict-status")).to_have_text("已取消")


def test_the_admin_resets_a_password_and_deletes_a_user(lab, page):
    sign_in(page, lab.url + "/admin", "admin", "admin-secret-1")
    expect(page.locator("#classes tbody")).to_have_text(re.compile("^No class yet: create one below"))   # not a bare header
    ned = page.locator('#users tr[data-user="ned"]')
    expect(page.locator('#users tr[data-user="admin"] [data-action="delete-user"]')).to_have_count(0)  # not yourself
    page.once("dialog", lambda dialog: dialog.accept("ned-pass-9"))
    ned.locator('[data-action="reset-password"]').click()
    expect(page.locator("#admin-status")).to_have_text("The password of ned is reset; their sessions have ended.")
    assert signs_in(lab, "ned", "ned-pass-9") and not signs_in(lab, "ned", "ned-pass-1")

    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.locator('#users tr[data-user="zed"] [data-action="delete-user"]').click()
    expect(page.locator("#admin-status")).to_have_text("zed is deleted.")
    assert asked == ["Delete zed with all of their submissions and runs?"]
    expect(page.locator('#users tr[data-user="zed"]')).to_have_count(0)
    assert not signs_in(lab, "zed", "zed-pass-1")

    lab.stop()                                        # the server goes away: the page says so, and keeps trying
    expect(page.locator("#admin-status")).to_have_text("The server cannot be reached; trying again every 3 s.",
                                                       timeout=10_000)
