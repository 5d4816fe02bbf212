"""Every lesson carries its explanation and self-check questions, in English and Chinese, and the
sources the page shows exist."""

import json

import pytest

from workers.lessons import LESSONS, TEXT_SECTIONS, read_texts


@pytest.mark.parametrize("lesson_id", sorted(LESSONS))
def test_each_lesson_explains_itself_in_both_languages(lesson_id):
    lesson = LESSONS[lesson_id]
    english, chinese = lesson.explanation("en"), lesson.explanation("zh")
    assert english.startswith("## ") and "<details><summary>" in english
    assert chinese != english and "<details><summary>" in chinese
    assert english.count("<details>") == chinese.count("<details>")
    assert all(text.strip() for _, text in lesson.source_files())


@pytest.mark.parametrize("lesson_id", sorted(LESSONS))
def test_each_lesson_texts_file_is_the_documented_format(lesson_id):
    """docs/i18n.md's format: known sections only, strings for title/summary, objects of strings else;
    `params` names only fields the lesson has."""
    lesson = LESSONS[lesson_id]
    for lang, texts in lesson.texts().items():
        assert set(texts) <= set(TEXT_SECTIONS), (lang, set(texts))
        assert set(texts.get("params", {})) <= set(lesson.params.model_fields), (lang, texts["params"])


def test_a_texts_file_not_in_the_format_is_refused_naming_the_file_and_section(tmp_path):
    bad = tmp_path / "texts.xx.json"
    bad.write_text(json.dumps({"title": "x", "labels": {}}))
    with pytest.raises(ValueError, match=r"texts\.xx\.json: unknown section 'labels'"):
        read_texts(bad)
    bad.write_text(json.dumps({"params": {"seq_len": 3}}))
    with pytest.raises(ValueError, match=r"'params' must be an object of strings"):
        read_texts(bad)


def test_a_language_for_a_lesson_comes_from_a_folder_on_paralab_i18n_path(tmp_path, monkeypatch):
    folder = tmp_path / "lessons" / "tp_mlp"
    folder.mkdir(parents=True)
    (folder / "texts.eo.json").write_text(json.dumps({"title": "Tensor-paralela MLP"}), encoding="utf-8")
    (folder / "explain.eo.md").write_text("## Klarigo\n", encoding="utf-8")
    monkeypatch.setenv("PARALAB_I18N_PATH", str(tmp_path))
    lesson = LESSONS["tp_mlp"]
    assert lesson.texts()["eo"] == {"title": "Tensor-paralela MLP"}
    assert "zh" in lesson.texts()                                # beside the lesson, still there
    assert lesson.explanation("eo") == "## Klarigo\n"
