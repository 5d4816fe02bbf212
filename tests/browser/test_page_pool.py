"""The browser tests' pages are kept between tests (tests/browser/conftest.py `PagePool`): one comes back
as a new context's would, with nothing of the test before."""

import pytest

pytestmark = pytest.mark.browser


def test_a_page_given_back_is_blank_when_taken_again(pages, server):
    page = pages.take(800, 600)
    page.goto(server.url + "/")
    page.evaluate("localStorage.setItem('paralab:lang', 'zh')")
    page.evaluate("sessionStorage.setItem('paralab:room-secret:ABCDEFGH', 'presenter')")   # the tab's: kept by a goto
    assert page.evaluate("localStorage.getItem('paralab:lang')") == "zh"
    page.context.add_cookies([{"name": "paralab_session", "value": "left-over", "url": server.url}])
    page.route("**/api/**", lambda route: route.abort())
    page.context.new_page()
    pages.give_back(page)

    again = pages.take(1400, 900)
    assert again is page                                        # kept, not made anew
    assert again.url == "about:blank" and again.context.pages == [again]
    again.goto(server.url + "/")
    assert again.evaluate("localStorage.getItem('paralab:lang')") is None
    assert again.evaluate("sessionStorage.getItem('paralab:room-secret:ABCDEFGH')") is None
    assert again.context.cookies() == []
    assert again.evaluate("fetch('/api/lessons').then((r) => r.status)") == 200    # its routes gone
    assert again.viewport_size == {"width": 1400, "height": 900}
    pages.give_back(again)
