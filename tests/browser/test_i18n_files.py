"""Adding a language is adding files (issue #11, point 4): a language no code knows — its dictionary and a
lesson's texts dropped into a folder on PARALAB_I18N_PATH — shows up in the switcher, and the page draws in
it: the template's words, a view's words, the lesson's title, its parameter help, a 422 by pydantic's type
and a lesson's rule by its code."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

ESPERANTO = {
    "_name": "Esperanto", "_switch": "ŝanĝi al Esperanto", "_html_lang": "eo",
    "Parameters": "Parametroj",
    "▶ Run": "▶ Lanĉi",
    "Press ▶ Run to start the ranks. Then step through what they did: Space or → next event, ← back, Home/End, or ▶ Play.":
        "Premu ▶ Lanĉi por starti la rangojn.",
    "pydantic.greater_than_equal": "devas esti almenaŭ {ge}",
}
TP_MLP = {
    "title": "Tensor-paralela MLP",
    "params": {"seq_len": "S, la nombro de ĵetonoj"},
    "errors": {},
    "text": {},
}


@pytest.fixture
def esperanto(tmp_path_factory):
    folder = tmp_path_factory.mktemp("languages")
    (folder / "eo.json").write_text(json.dumps(ESPERANTO, ensure_ascii=False), encoding="utf-8")
    lesson = folder / "lessons" / "tp_mlp"
    lesson.mkdir(parents=True)
    (lesson / "texts.eo.json").write_text(json.dumps(TP_MLP, ensure_ascii=False), encoding="utf-8")
    return folder


def test_a_language_dropped_into_paralab_i18n_path_is_offered_and_draws_the_page(page: Page, server_factory, esperanto):
    lab = server_factory(env={"PARALAB_I18N_PATH": str(esperanto)})
    page.goto(f"{lab.url}/lessons/tp_mlp?world_size=3&seq_len=0")
    switch = page.locator('[data-action="lang"][data-lang="eo"]')
    expect(switch).to_have_text("Esperanto")
    expect(switch).to_have_attribute("aria-label", "Esperanto — ŝanĝi al Esperanto")
    expect(page.locator('[data-action="lang"][data-lang="zh"]')).to_have_text("中文")   # the built-in one too
    switch.click()

    expect(page.locator("html")).to_have_attribute("lang", "eo")
    expect(page.locator(".params-toggle")).to_have_text("Parametroj")                  # the template's words
    expect(page.locator(".lesson-title")).to_have_text("Tensor-paralela MLP")         # the lesson's texts
    expect(page.locator("#help-seq_len")).to_have_text("S, la nombro de ĵetonoj")
    expect(page.locator("#help-hidden")).to_have_text("H, the model width")           # not translated: English
    expect(page.locator("#lanes")).to_contain_text("Premu ▶ Lanĉi por starti la rangojn.")   # a view's words

    page.locator(".run-button").click()                                                # a 422: by pydantic's type
    expect(page.locator("#error-seq_len")).to_have_text("devas esti almenaŭ 1")
    expect(page.locator("#error-ffn")).to_have_text("ffn=64 must be divisible by the number of ranks (3)")

    page.reload()                                                                       # remembered
    expect(page.locator("html")).to_have_attribute("lang", "eo")
    expect(page.locator(".lesson-title")).to_have_text("Tensor-paralela MLP")
    page.locator('[data-action="lang"][data-lang="en"]').click()
    expect(page.locator(".lesson-title")).to_have_text("Tensor-parallel MLP")
    expect(page.locator(".params-toggle")).to_have_text("Parameters")
