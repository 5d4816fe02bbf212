"""The lesson catalogue, importable without torch.

A lesson is a package here (or in a folder named by PARALAB_LESSONS_PATH, os.pathsep-separated,
for lessons kept outside the repository): `__init__.py` describes it (`LESSON`: title, parameters as a pydantic
model, allowed world sizes) without importing torch, so the server can validate a run; its
`program.py` is the rank program learners read in the page; `explain.<lang>.md` is its text, and
`texts.<lang>.json` translates its other words (title, summary, parameter help, the labels and names its
events carry, its validators' messages) — docs/i18n.md describes the format. A folder named by
PARALAB_I18N_PATH may add a language to a lesson as `lessons/<id>/texts.<lang>.json`.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from workers.site_path import shown_path

LESSONS_DIR = Path(__file__).resolve().parent
__path__.extend(p for p in os.environ.get("PARALAB_LESSONS_PATH", "").split(os.pathsep) if p)  # noqa: F821
TEXT_SECTIONS = ("title", "summary", "params", "text", "errors")   # what a texts.<lang>.json may hold


def i18n_dirs() -> list[Path]:
    """Folders that add languages without touching the repository (PARALAB_I18N_PATH, os.pathsep-separated)."""
    return [Path(p) for p in os.environ.get("PARALAB_I18N_PATH", "").split(os.pathsep) if p]


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    summary: str
    params: type[BaseModel]
    world_sizes: tuple[int, ...]
    default_world_size: int = 2   # the page's first choice: its default parameters must fit it
    sources: tuple[str, ...] = ("program.py",)   # files shown in the page, relative to the lesson
    runtime_rules: str | None = None   # a module with `check(params, world_size)` and `choices()`
                                       # for rules that need torch; the warm launcher runs them
    tags: tuple[str, ...] = field(default_factory=tuple)
    rank_runner: str | None = None     # a module whose `run_rank(request, rank, store_path)` runs each rank
                                       # instead (a user's script, which makes its own process group)

    def __post_init__(self):
        if self.default_world_size not in self.world_sizes:
            raise ValueError(f"lesson {self.id}: default_world_size {self.default_world_size} is not one of "
                             f"its world sizes {self.world_sizes}")

    @property
    def program_module(self) -> str:
        return f"workers.lessons.{self.id}.program"

    def validate(self, params: dict, world_size: int) -> BaseModel:
        """Parameters checked against the lesson's rules for this world size (raises ValidationError);
        those not given take their defaults for this world size."""
        return self.params.model_validate({**self.params.defaults_for(world_size), **params},
                                          context={"world_size": world_size})

    @property
    def dir(self) -> Path:
        return Path(importlib.import_module(f"{__name__}.{self.id}").__file__).resolve().parent

    def runtime_problems(self, params: BaseModel, world_size: int) -> list[tuple]:
        """(field, message[, code, params]) for each torch-side rule broken (call where torch is imported)."""
        if self.runtime_rules is None:
            return []
        return importlib.import_module(self.runtime_rules).check(params, world_size)

    def runtime_choices(self) -> dict[str, list]:
        """Allowed values only torch knows (e.g. the schedules this torch ships), by field."""
        if self.runtime_rules is None:
            return {}
        return importlib.import_module(self.runtime_rules).choices()

    def source_files(self) -> list[tuple[str, str]]:
        """(path as the tracer's `site` names it, text) for each file the page shows."""
        files = []
        for name in self.sources:
            path = self.dir / name
            files.append((shown_path(str(path)), path.read_text()))
        return files

    def explanation(self, lang: str = "en") -> str:
        candidates = [self.dir / f"explain.{lang}.md"] + [Path(d, "lessons", self.id, f"explain.{lang}.md") for d in i18n_dirs()]
        path = next((c for c in candidates if c.exists()), candidates[0])
        if not path.exists():
            path = self.dir / "explain.en.md"
        return path.read_text() if path.exists() else ""

    def text_files(self) -> dict[str, Path]:
        """language → its texts.<lang>.json: beside the lesson, or under PARALAB_I18N_PATH's lessons/<id>/."""
        folders = [Path(d, "lessons", self.id) for d in reversed(i18n_dirs())] + [self.dir]
        found = {}
        for folder in folders:                               # beside the lesson wins, then the first path
            for path in sorted(folder.glob("texts.*.json")):
                found[path.name.removeprefix("texts.").removesuffix(".json")] = path
        return found

    def texts(self) -> dict[str, dict]:
        """Every language's translation of the lesson's words: {lang: {title, summary, params, text, errors}}."""
        return {lang: read_texts(path) for lang, path in sorted(self.text_files().items())}


def read_texts(path: Path) -> dict:
    """One texts.<lang>.json, refused with the file and the section named if it is not the format."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a lesson's texts are one JSON object, not {type(data).__name__}")
    for section, value in data.items():
        if section not in TEXT_SECTIONS:
            raise ValueError(f"{path}: unknown section {section!r}; known: {', '.join(TEXT_SECTIONS)}")
        wanted = str if section in ("title", "summary") else dict
        if not isinstance(value, wanted) or (wanted is dict and not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
            raise ValueError(f"{path}: {section!r} must be {'a string' if wanted is str else 'an object of strings'}")
    return data


def _discover() -> dict[str, Lesson]:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):  # noqa: F821
        if info.ispkg:
            lesson = importlib.import_module(f"{__name__}.{info.name}").LESSON
            found[lesson.id] = lesson
    return found


LESSONS: dict[str, Lesson] = _discover()
