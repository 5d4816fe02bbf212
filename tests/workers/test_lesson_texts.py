"""Every lesson carries its explanation and self-check questions, in English and Chinese, and the
sources the page shows exist."""

import pytest

from workers.lessons import LESSONS


@pytest.mark.parametrize("lesson_id", sorted(LESSONS))
def test_each_lesson_explains_itself_in_both_languages(lesson_id):
    lesson = LESSONS[lesson_id]
    english, chinese = lesson.explanation("en"), lesson.explanation("zh")
    assert english.startswith("## ") and "<details><summary>" in english
    assert chinese != english and "<details><summary>" in chinese
    assert english.count("<details>") == chinese.count("<details>")
    assert all(text.strip() for _, text in lesson.source_files())
