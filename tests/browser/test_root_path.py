"""paralab under a path (PARALAB_ROOT_PATH), behind a proxy that strips it as jupyter-server-proxy
does: the index and a lesson page load whole in Chromium — every module, stylesheet and fetch under
the path, none refused — and the lesson's links keep the path."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.app.prefix_proxy import PrefixProxy

pytestmark = pytest.mark.browser
PREFIX = "/user/ada/paralab"


def test_the_pages_work_under_the_path(server_factory, page):
    live = server_factory(None, "--root-path", PREFIX)
    failed = []
    lecture_mode = f"{PREFIX}/api/progress"       # 404 in the lecture mode by design: progress stays in the browser
    listeners = {"response": lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 and lecture_mode not in r.url else None,
                 "requestfailed": lambda r: failed.append(f"failed {r.url}") if lecture_mode not in r.url else None}
    for event, listener in listeners.items():
        page.on(event, listener)
    with PrefixProxy(PREFIX, live.port) as proxy:
        page.goto(proxy.url + "/")
        lesson = page.locator(f'a[href="{PREFIX}/lessons/collectives"]')
        expect(lesson).to_be_visible()
        lesson.click()
        page.wait_for_url(f"**{PREFIX}/lessons/collectives")
        expect(page.locator(".run-button")).to_be_enabled()          # its form, from GET …/api/lessons/collectives
        expect(page.locator(".brand")).to_have_attribute("href", f"{PREFIX}/")
        with page.expect_response(lambda r: r.url.endswith(f"{PREFIX}/api/i18n/zh")) as words, \
                page.expect_response(lambda r: f"{PREFIX}/api/lessons/collectives" in r.url) as texts:
            page.locator('[data-action="lang"][data-lang="zh"]').click()      # a language's words, fetched,
        assert words.value.status == 200                                       # then the lesson's in it
        assert texts.value.status == 200
    for event, listener in listeners.items():     # the page goes on to the next test
        page.remove_listener(event, listener)
    assert failed == [], failed
