"""The lesson catalogue, importable without torch.

A lesson is a package here (or in a folder named by PARALAB_LESSONS_PATH, os.pathsep-separated,
for lessons kept outside the repository): `__init__.py` describes it (`LESSON`: title, parameters as a pydantic
model, allowed world sizes) without importing torch, so the server can validate a run; its
`program.py` is the rank program learners read in the page; `explain.<lang>.md` is its text.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

LESSONS_DIR = Path(__file__).resolve().parent
_REPO_ROOT = LESSONS_DIR.parent.parent
__path__.extend(p for p in os.environ.get("PARALAB_LESSONS_PATH", "").split(os.pathsep) if p)  # noqa: F821


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    summary: str
    params: type[BaseModel]
    world_sizes: tuple[int, ...]
    sources: tuple[str, ...] = ("program.py",)   # files shown in the page, relative to the lesson
    runtime_rules: str | None = None   # a module with `check(params, world_size)` and `choices()`
                                       # for rules that need torch; the warm launcher runs them
    tags: tuple[str, ...] = field(default_factory=tuple)
    rank_runner: str | None = None     # a module whose `run_rank(request, rank, store_path)` runs each rank
                                       # instead (a user's script, which makes its own process group)

    @property
    def program_module(self) -> str:
        return f"workers.lessons.{self.id}.program"

    def validate(self, params: dict, world_size: int) -> BaseModel:
        """Parameters checked against the lesson's rules for this world size (raises ValidationError)."""
        return self.params.model_validate(params, context={"world_size": world_size})

    @property
    def dir(self) -> Path:
        return Path(importlib.import_module(f"{__name__}.{self.id}").__file__).resolve().parent

    def runtime_problems(self, params: BaseModel, world_size: int) -> list[tuple[str, str]]:
        """(field, message) for each torch-side rule broken (call where torch is imported)."""
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
            path = (self.dir / name).resolve()
            shown = path.relative_to(_REPO_ROOT) if path.is_relative_to(_REPO_ROOT) else path
            files.append((str(shown), path.read_text()))
        return files

    def explanation(self, lang: str = "en") -> str:
        path = self.dir / f"explain.{lang}.md"
        if not path.exists():
            path = self.dir / "explain.en.md"
        return path.read_text() if path.exists() else ""


def _discover() -> dict[str, Lesson]:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):  # noqa: F821
        if info.ispkg:
            lesson = importlib.import_module(f"{__name__}.{info.name}").LESSON
            found[lesson.id] = lesson
    return found


LESSONS: dict[str, Lesson] = _discover()
