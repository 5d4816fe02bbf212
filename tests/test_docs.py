"""Docs that match the code. The README's lesson table is the one the lesson registry writes (every
lesson, its title, summary and the mistakes it reproduces); `python3 -m tests.test_docs` (or
`make readme`) rewrites it. The README's Developing section explains every test marker pytest
knows. docs/lessons.md's example lesson is run as real lessons are: its parameters on LessonParams,
validated for a world size."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
import types
import typing
from pathlib import Path

import pytest
from pydantic import ValidationError

from workers.lessons import LESSONS, LESSONS_DIR, Lesson
from workers.lessons.params import LessonParams

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
LESSONS_DOC = REPO / "docs" / "lessons.md"
TABLE_START = "<!-- lesson table: written by `make readme` from workers/lessons; tests/test_docs.py checks it -->"
TABLE_END = "<!-- end of the lesson table -->"


def mistakes(lesson: Lesson) -> list[str]:
    """The bugs a lesson reproduces: its `mistake` parameter's choices besides "none"."""
    field = lesson.params.model_fields.get("mistake")
    return [] if field is None else [m for m in typing.get_args(field.annotation) if m != "none"]


def lesson_table() -> str:
    rows = ["| id | lesson | what it shows |", "|---|---|---|"]
    for lesson in LESSONS.values():
        if not lesson.dir.is_relative_to(LESSONS_DIR):           # a lesson kept elsewhere (PARALAB_LESSONS_PATH)
            continue
        shown = mistakes(lesson)
        shows = lesson.summary + (f" Mistake{'s' * (len(shown) > 1)}: {', '.join(f'`{m}`' for m in shown)}." if shown else "")
        rows.append(f"| `{lesson.id}` | {lesson.title} | {shows.replace('|', chr(92) + '|')} |")
    return "\n".join(rows)


def readme_table(text: str) -> str:
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    return text[start:end].strip()


def write_readme() -> None:
    text = README.read_text()
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    README.write_text(f"{text[:start]}\n{lesson_table()}\n{text[end:]}")


def test_the_readme_lists_every_lesson_as_the_registry_describes_it():
    table = readme_table(README.read_text())
    assert table == lesson_table(), "the README's lesson table is out of date: run `make readme`"
    for lesson_id in LESSONS:
        assert f"| `{lesson_id}` |" in table


def test_the_lesson_table_names_the_mistakes_a_lesson_reproduces():
    rows = {row.split(" | ")[0]: row for row in lesson_table().splitlines()}
    assert rows["| `tp_mlp`"].endswith("Mistake: `swap_f_g`. |")
    assert rows["| `three_d`"].endswith("Mistakes: `sync_every_microbatch`, `sync_before_last_backward`. |")
    assert "Mistake" not in rows["| `collectives`"]


def test_the_readme_explains_every_test_marker_pytest_knows():
    registered = {line.split(":")[0].strip(' "') for line in
                  tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]}
    explained = set(re.findall(r"^\| `(\w+)` \|", README.read_text().split("## Developing")[1].split("\n## ")[0], re.M))
    assert registered == explained == {"browser", "sandbox", "cluster", "slow"}


def python_block_after(heading: str, text: str) -> str:
    """The first ```python block after `heading` in a Markdown text."""
    after = text[text.index(heading):]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


@pytest.fixture(scope="module")
def example_lesson() -> Lesson:
    """docs/lessons.md's `__init__.py`, run as a module of its own (pydantic reads its annotations there)."""
    module = types.ModuleType("docs_example_lesson")
    sys.modules[module.__name__] = module
    try:
        exec(python_block_after("## `__init__.py`", LESSONS_DOC.read_text()), module.__dict__)
        yield module.LESSON
    finally:
        del sys.modules[module.__name__]


def test_the_example_lesson_declares_its_parameters_as_real_lessons_do(example_lesson):
    assert isinstance(example_lesson, Lesson)
    assert issubclass(example_lesson.params, LessonParams)
    assert all(issubclass(lesson.params, LessonParams) for lesson in LESSONS.values())


def test_the_example_lessons_rules_hold_for_the_world_size(example_lesson):
    assert example_lesson.validate({"hidden": 32}, world_size=4).hidden == 32
    with pytest.raises(ValidationError, match="hidden=16 must be divisible by the number of ranks"):
        example_lesson.validate({}, world_size=3)                 # the default is checked too
    with pytest.raises(ValidationError, match="hiden"):
        example_lesson.validate({"hiden": 32}, world_size=1)      # an unknown parameter is refused


def test_the_example_lessons_mistake_is_listed_as_real_lessons_are(example_lesson):
    assert mistakes(example_lesson) == ["forget_sum"]


def test_the_example_program_is_python():
    ast.parse(python_block_after("## `program.py`", LESSONS_DOC.read_text()))


if __name__ == "__main__":
    write_readme()
