"""The interface's dictionaries: which languages there are, and one language's words."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from app import i18n
from app.messages import Refusal, say

router = APIRouter(prefix="/api/i18n", tags=["languages"])


@router.get("")
def read_languages() -> dict[str, str]:
    """{code: name} of every language the interface speaks (app/static/i18n/*.json and PARALAB_I18N_PATH)."""
    return i18n.languages()


@router.get("/{lang}")
def read_dictionary(lang: Annotated[str, Path(max_length=16, pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")]):
    """One language's dictionary: {English text or message code: its translation} (docs/i18n.md)."""
    words = i18n.dictionary(lang)
    if words is None:
        raise Refusal(404, say("i18n.no_language", "no language '{lang}'; known: {known}", lang=lang,
                               known=", ".join(i18n.languages())))
    return words
