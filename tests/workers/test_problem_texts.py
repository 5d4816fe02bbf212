"""Each problem's words in other languages (texts.<lang>.json, statement.<lang>.md) are the
format docs/i18n.md gives lessons: what they translate exists in English — the title, each
function's doc, every check name and static detail the checker writes for the reference."""

from __future__ import annotations

import importlib

import pytest

from workers.problems import PROBLEMS
from workers.problems.report import decode, encode

TRANSLATED = [p for p in PROBLEMS.values() if p.texts()]


def test_every_problem_has_chinese():
    assert {p.id for p in TRANSLATED} == set(PROBLEMS)
    assert all("zh" in p.texts() and "zh" in p.statements() for p in PROBLEMS.values())
    for problem in TRANSLATED:
        assert set(problem.statements()) >= {"en", *problem.texts()}


@pytest.mark.parametrize("problem", TRANSLATED, ids=lambda p: p.id)
def test_a_problems_texts_translate_words_it_really_shows(problem):
    verify = importlib.import_module(f"workers.problems.{problem.id}.verify").verify
    shown = {problem.title, *(f.doc for f in problem.functions)}
    for rank in range(problem.world_size):
        for row in verify(rank, problem.world_size, decode(encode({}, [])).outputs, []):
            shown |= {row["name"], row["detail"].split(" — ")[0].split(" (this rank")[0]}
    for lang, texts in problem.texts().items():
        assert set(texts) <= {"title", "functions", "text"}, lang
        assert texts["title"] and set(texts["functions"]) == {f.name for f in problem.functions}
        unknown = set(texts["text"]) - shown - {"traffic"}
        assert not unknown, f"{problem.id}: {lang} translates words no check shows: {unknown}"
        missing = {w for w in shown if w not in texts["text"]} - {problem.title, *(f.doc for f in problem.functions)}
        assert not missing, f"{problem.id}: {lang} lacks {missing}"
