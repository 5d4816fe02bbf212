"""The interface's languages, as data: `app/static/i18n/<lang>.json` (and `<lang>.json` in the folders of
PARALAB_I18N_PATH) — one dictionary per language, keyed by the English or by a message code
(docs/i18n.md). English needs none: its keys are its words. Adding a language is adding files."""

from __future__ import annotations

import json
from pathlib import Path

from app.settings import STATIC_DIR
from workers.lessons import LESSONS, i18n_dirs

BUILT_IN = STATIC_DIR / "i18n"
ENGLISH = {"_name": "English", "_switch": "switch to English", "_html_lang": "en"}


def dictionary_files() -> dict[str, Path]:
    """language → its dictionary file; one in app/static/i18n/ wins over one on PARALAB_I18N_PATH."""
    found = {}
    for folder in [*reversed(i18n_dirs()), BUILT_IN]:
        for path in sorted(folder.glob("*.json")):
            found[path.stem] = path
    return found


def dictionary(lang: str) -> dict[str, str] | None:
    """One language's dictionary, or None where there is none (English: its few words about itself)."""
    if lang == "en":
        return dict(ENGLISH)
    path = dictionary_files().get(lang)
    if path is None:
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f"{path}: a dictionary is one JSON object of strings")
    return data


def languages() -> dict[str, str]:
    """{code: the language's own name}, English first."""
    return {lang: about["name"] for lang, about in switcher().items()}


def switcher() -> dict[str, dict[str, str]]:
    """{code: {name, switch}} for the page's language buttons: each language's name and its own
    "switch to …", English first."""
    found = {"en": {"name": ENGLISH["_name"], "switch": ENGLISH["_switch"]}}
    for lang in dictionary_files():
        words = dictionary(lang) or {}
        found[lang] = {"name": words.get("_name", lang), "switch": words.get("_switch", words.get("_name", lang))}
    return found


def lesson_names() -> dict[str, dict[str, str]]:
    """{lang: {a lesson's English title or summary: its translation}} for every lesson: the index, the
    room's lesson picker and the "know first" lists name lessons on pages that load no lesson's texts."""
    names: dict[str, dict[str, str]] = {}
    for lesson in LESSONS.values():
        for lang, texts in lesson.texts().items():
            for field in ("title", "summary"):
                if texts.get(field):
                    names.setdefault(lang, {})[getattr(lesson, field)] = texts[field]
    return names
