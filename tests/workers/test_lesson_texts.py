"""Every lesson carries its explanation and self-check questions, in English and Chinese, its other words
in Chinese (texts.zh.json, docs/i18n.md's format), and the sources the page shows exist."""

import json
import re

import pytest

from workers.lessons import LESSONS, TEXT_SECTIONS, read_texts
from workers.lessons.explain_steps import split_markers

CHINESE = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("lesson_id", sorted(LESSONS))
def test_each_lesson_explains_itself_in_both_languages(lesson_id):
    lesson = LESSONS[lesson_id]
    english, chinese = (split_markers(lesson.explanation(lang))[0] for lang in ("en", "zh"))   # without step markers
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


def _rule_codes(lesson) -> set[str]:
    """The codes the lesson's own rules raise (`rule("<id>.…"` in pydantic validators, `_problem(…, "<id>.…"`
    in torch-side rules)."""
    codes = set()
    for path in lesson.dir.glob("*.py"):
        codes |= set(re.findall(rf'"({re.escape(lesson.id)}\.[a-z0-9_]+)"', path.read_text(encoding="utf-8")))
    return codes


@pytest.mark.parametrize("lesson_id", sorted(LESSONS))
def test_each_lesson_is_complete_in_chinese(lesson_id):
    """Its title, summary, every parameter's help and every rule's message (the events' strings are checked
    in a browser, every lesson run: tests/browser/test_chinese.py)."""
    lesson = LESSONS[lesson_id]
    chinese = lesson.texts().get("zh")
    assert chinese, f"{lesson_id} has no texts.zh.json"
    assert chinese["title"] and chinese["summary"] and CHINESE.search(chinese["title"] + chinese["summary"])
    assert set(chinese.get("params", {})) == set(lesson.params.model_fields), "every parameter's help"
    assert _rule_codes(lesson) <= set(chinese.get("errors", {})), "every rule's message"
    for key, text in {**chinese.get("text", {}), **chinese.get("errors", {})}.items():
        assert set(re.findall(r"\{(\w+)\}", text)) == set(re.findall(r"\{(\w+)\}", key)) or "." in key, (key, text)
