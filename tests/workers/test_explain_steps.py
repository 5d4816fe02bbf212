"""The `explains` markers of a lesson's explanation: parsed, taken out of the text, and refused with a
clear message when they are malformed; every lesson's explanation parses."""

from __future__ import annotations

import pytest

from workers.lessons import LESSONS
from workers.lessons.explain_steps import split_markers


def test_a_marker_names_the_heading_after_it_and_leaves_the_text():
    text = "intro\n<!-- explains: kind=compute ; name=B|I|W -->\n## Backward\nbody\n## Other\n"
    markdown, steps = split_markers(text)
    assert markdown == "intro\n## Backward\nbody\n## Other\n"
    assert steps == [{"heading": "Backward", "when": {"kind": ["compute"], "name": ["B", "I", "W"]}}]


@pytest.mark.parametrize("text, words", [
    ("<!-- explains: kind -->\n## A\n", "name=value"),
    ("<!-- explains: kind=p2p -->\nnot a heading\n", "followed by a `## ` heading"),
    ("text\n<!-- explains: kind=p2p -->\n", "no heading after it"),
])
def test_a_malformed_marker_is_refused_by_line(text, words):
    with pytest.raises(ValueError, match="explanation line"):
        split_markers(text)
    with pytest.raises(ValueError) as error:
        split_markers(text)
    assert words in str(error.value)


@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_every_lessons_explanation_parses_and_its_markers_name_its_headings(lesson):
    for lang in ("en", "zh"):
        markdown, steps = split_markers(LESSONS[lesson].explanation(lang))
        assert "explains:" not in markdown
        for step in steps:
            assert f"## {step['heading']}" in markdown
