"""The index as a course: the lessons in teaching order, grouped into parts, each card saying what to
know first; a learner's progress (lessons run to the end, self-check questions opened) kept in the
browser and shown on the index."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from workers.lessons.course import KNOW_FIRST, PARTS

pytestmark = pytest.mark.browser


def test_the_index_is_the_course_in_order(page: Page, server):
    page.goto(server.url + "/")
    parts = page.locator(".course-part .part-name")
    expect(parts.first).to_have_text("Foundations")
    titles = parts.all_inner_texts()
    assert titles[-1] == "More lessons"                      # the tests' own lessons, after the course
    assert titles[:-1] == [title for title, _, _ in PARTS if title in titles]   # the course in teaching order
    shown = page.locator(".course-part .lesson-card").evaluate_all("cards => cards.map((c) => c.dataset.card)")
    course = [lesson for _, _, ids in PARTS for lesson in ids if lesson in shown]
    assert shown[: len(course)] == course
    assert {"collectives", "tp_mlp", "pp", "three_d", "context_parallel", "fsdp2", "dtensor"} <= set(shown)
    three_d = page.locator('.lesson-card[data-card="three_d"] .know-first .first')
    expect(three_d).to_have_count(len(KNOW_FIRST["three_d"]))
    expect(page.locator('.lesson-card[data-card="collectives"] .know-first')).to_have_count(0)   # where to start


def test_progress_is_kept_in_the_browser(page: Page, server):
    asked = []   # the single-user server keeps no progress: the pages do not ask it (a 404 in the console)
    page.on("request", lambda request: "/api/progress" in request.url and asked.append(request.url))
    page.goto(server.url + "/lessons/collectives?world_size=2")
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    questions = page.locator("#explanation details.self-check")
    count = questions.count()
    assert count >= 1
    questions.first.locator("summary").click()
    # the answer is kept at the question's "toggle" event, a task of its own: leaving at once can beat it
    page.wait_for_function("() => (JSON.parse(localStorage.getItem('paralab:progress') || '{}')"
                           ".collectives?.answered || []).length === 1")

    page.goto(server.url + "/")
    card = page.locator('.lesson-card[data-card="collectives"]')
    expect(card).to_have_class(re.compile(r"\bdone\b"))
    expect(card.locator(".lesson-progress")).to_have_text(f"✓ ran · 1 of {count} questions answered")
    expect(page.locator(".course-progress")).to_have_text(re.compile(r"^1 of \d+ lessons run$"))
    expect(page.locator('.lesson-card[data-card="tp_mlp"] .lesson-progress')).to_be_hidden()
    assert asked == []
