"""Every lesson's every parameter comes back as it went in: from the address bar into the form, from the
form into the run it starts, and through a lecture room's link. The bug this guards: `?bucketed=false`
read as true (the string "false" is truthy), so an unticked box ran the other variant."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from tests import web
from workers.lessons import LESSONS

pytestmark = pytest.mark.browser

READ_FORM = """async () => {
  const { readParamsForm } = await import("paralab/controls/params-form.js");
  return readParamsForm(document.querySelector("#run-form"));
}"""


def _resolve(schema: dict, prop: dict) -> dict:
    if "$ref" in prop:
        return {**schema["$defs"][prop["$ref"].split("/")[-1]], **prop}
    if "anyOf" in prop:
        return {**next(p for p in prop["anyOf"] if p.get("type") != "null"), **prop}
    return prop


def other_value(prop: dict):
    """A value for the field that is not its default, of the field's own type."""
    default = prop.get("default")
    options = prop.get("enum")
    if options:
        return next(o for o in options if o != default)
    kind = prop.get("type")
    if kind == "boolean":
        return not default
    if kind == "integer":
        low = prop.get("minimum", prop.get("exclusiveMinimum", 0) + 1 if "exclusiveMinimum" in prop else 0)
        return (default if default is not None else low) + 1
    if kind == "number":
        return (default or 0) + 2.5
    return "x"


def lessons(server) -> list[dict]:
    return web.get(server.url + "/api/lessons").json()


def test_every_parameter_round_trips_through_the_address_and_the_form(page: Page, server):
    for lesson in lessons(server):
        schema = lesson["params"]
        fields = {name: _resolve(schema, prop) for name, prop in schema.get("properties", {}).items()}
        # a program's text and its arguments (the script lesson) stay out of the address: not read from it either
        fields = {name: prop for name, prop in fields.items() if prop.get("format") != "python" and prop.get("type") != "array"}
        changed = {name: other_value(prop) for name, prop in fields.items()}
        defaults = {name: prop["default"] for name, prop in fields.items() if prop.get("default") is not None}
        size = 2 if 2 in lesson["world_sizes"] else lesson["world_sizes"][0]
        for wanted in (changed, defaults):   # every value written out: `false` as well as `true`
            query = urlencode({"world_size": size, **{k: str(v).lower() if isinstance(v, bool) else v
                                                      for k, v in wanted.items()}})
            page.goto(f"{server.url}/lessons/{lesson['id']}?{query}")
            expect(page.locator(".lesson-title")).to_have_text(lesson["title"])
            expect(page.locator(".run-button")).to_be_enabled()      # the form is built from the lesson's schema
            shown = page.evaluate(READ_FORM)
            assert shown["world_size"] == size, lesson["id"]
            assert {k: shown["params"][k] for k in wanted} == wanted, lesson["id"]


def test_every_lesson_page_first_offers_a_world_size_its_defaults_fit(page: Page, server):
    """Press Run on a page just opened: its defaults start a run (3D parallelism's 2 × 2 × 2 grid
    offered 2 ranks, and the server refused)."""
    for lesson in lessons(server):
        page.goto(f"{server.url}/lessons/{lesson['id']}")
        expect(page.locator(".run-button")).to_be_enabled()
        shown = page.evaluate(READ_FORM)
        assert shown["world_size"] == lesson["default_world_size"], lesson["id"]
        if lesson["id"] in LESSONS:   # not the tests' own lessons (tests/lessons_extra)
            LESSONS[lesson["id"]].validate(shown["params"], shown["world_size"])   # raises what a 422 would say
    assert next(lesson for lesson in lessons(server) if lesson["id"] == "three_d")["default_world_size"] == 8


def test_an_unticked_box_in_the_address_runs_unticked_and_presents_unticked(page: Page, server):
    page.goto(f"{server.url}/lessons/dp?world_size=2&bucketed=false")
    expect(page.locator("#param-bucketed")).not_to_be_checked()
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    run_id = re.search(r"run=([0-9a-f]+)", page.url).group(1)
    assert web.get(f"{server.url}/api/runs/{run_id}").json()["params"]["bucketed"] is False

    page.goto(f"{server.url}/lessons/collectives?world_size=2&sweep=false&op=broadcast")
    page.get_by_role("button", name="Present").click()
    page.wait_for_url(re.compile(r"/rooms/[A-Z2-9]{8}$"))
    expect(page.locator("#param-op")).to_have_value("broadcast")      # the presenter's form, from the link
    expect(page.locator("#param-sweep")).not_to_be_checked()
    assert page.evaluate(READ_FORM)["params"]["sweep"] is False
    assert page.evaluate(READ_FORM)["params"]["op"] == "broadcast"


def test_fields_not_typed_into_follow_the_number_of_ranks_chosen(page: Page, server):
    """3D parallelism's grid must fill its ranks: each number of ranks chosen shows a grid that does (and
    starts), and a field the viewer typed into keeps what they typed."""
    page.goto(f"{server.url}/lessons/three_d")
    expect(page.locator(".run-button")).to_be_enabled()
    for size in (4, 6, 1, 8):
        page.get_by_role("radio", name=str(size), exact=True).check()
        shown = page.evaluate(READ_FORM)
        grid = [shown["params"][k] for k in ("tp", "pp", "dp")]
        assert grid[0] * grid[1] * grid[2] == size, (size, grid)
        LESSONS["three_d"].validate(shown["params"], size)
    page.get_by_role("radio", name="4", exact=True).check()
    expect(page.locator(".params-summary")).to_contain_text("4 ranks · tp 2 · pp 2 · dp 1")
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)

    page.locator(".params-toggle").click()
    page.locator("#param-tp").fill("1")
    page.get_by_role("radio", name="2", exact=True).check()
    assert [page.evaluate(READ_FORM)["params"][k] for k in ("tp", "pp", "dp")] == [1, 1, 1]   # tp as typed
