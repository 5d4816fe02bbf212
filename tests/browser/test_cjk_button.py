"""The language button reads 中文 on any machine: its two glyphs ship with the page, so a projector's
laptop with no CJK font shows the characters, not boxes."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser


def test_the_language_button_has_its_own_glyphs(page: Page, server):
    page.goto(server.url + "/")
    button = page.locator('[data-action="lang"]')
    assert button.inner_text() == "中文"
    assert button.evaluate("b => getComputedStyle(b).fontFamily").startswith('"Paralab zh button"')
    loaded = page.evaluate("""async () => {
      const faces = await document.fonts.load('700 16px "Paralab zh button"', '中文');
      return faces.map((f) => [f.family, f.status]);
    }""")
    assert loaded == [['"Paralab zh button"', "loaded"]] or loaded == [["Paralab zh button", "loaded"]]

    # The characters drawn are the shipped font's, not a system font's boxes (Linux's system-ui answered
    # for them while it came first in the chain); asked after a frame drawn with the font loaded.
    button.evaluate("() => new Promise((drawn) => requestAnimationFrame(() => requestAnimationFrame(drawn)))")
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": '[data-action="lang"]'})["nodeId"]
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    assert [(f["isCustomFont"], f["glyphCount"]) for f in fonts] == [(True, 2)], fonts
