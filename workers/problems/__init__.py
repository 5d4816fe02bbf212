"""Practice problems: the learner writes a few functions; a harness runs them on real ranks and
reports every output and gradient, and the judge checks them, outside the learner's reach, against a
single-process reference, with the communication they performed.

A problem is a package here: `__init__.py` (PROBLEM: title, world size, the functions to write and
their signatures), `statement.en.md` (and `statement.<lang>.md`, `texts.<lang>.json` in other
languages), `starter.py` (what the editor opens with), `reference.py` (a
correct solution, hidden from the sandbox), `harness.py` (`run(lab, submission) -> outputs`, on every
rank, inside the sandbox) and `verify.py` (`verify(rank, world, outputs, calls) -> checks`, in the
judge's checker, outside). See docs/judge.md. Torch-free, so the server can list problems.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from dataclasses import dataclass
from pathlib import Path

PROBLEMS_DIR = Path(__file__).resolve().parent
ALLOWED_IMPORTS = ("torch", "math", "typing", "dataclasses", "functools", "itertools", "collections",
                   "workers.comm")


@dataclass(frozen=True)
class Function:
    name: str
    signature: str
    doc: str


@dataclass(frozen=True)
class Problem:
    id: str
    title: str
    world_size: int
    functions: tuple[Function, ...]
    lesson: str | None = None          # the lesson that teaches what this problem practises

    @property
    def dir(self) -> Path:
        return PROBLEMS_DIR / self.id

    def text(self, name: str) -> str:
        return (self.dir / name).read_text()

    def statements(self) -> dict[str, str]:
        """The statement in each language it is written in: statement.<lang>.md."""
        return {path.name.split(".")[1]: path.read_text() for path in sorted(self.dir.glob("statement.*.md"))}

    def texts(self) -> dict[str, dict]:
        """The problem's own words in each other language (texts.<lang>.json, as a lesson's in
        docs/i18n.md): `title`, `functions` (name -> doc), `text` (a check's name or detail, keyed by
        the English exactly as the checker writes it)."""
        return {path.name.split(".")[1]: json.loads(path.read_text()) for path in sorted(self.dir.glob("texts.*.json"))}

    def public(self) -> dict:
        return {"id": self.id, "title": self.title, "world_size": self.world_size,
                "functions": [{"name": f.name, "signature": f.signature, "doc": f.doc} for f in self.functions]}


def _discover() -> dict[str, Problem]:
    found = {}
    for info in sorted(pkgutil.iter_modules([str(PROBLEMS_DIR)]), key=lambda i: i.name):
        if info.ispkg:
            problem = importlib.import_module(f"{__name__}.{info.name}").PROBLEM
            found[problem.id] = problem
    return found


PROBLEMS: dict[str, Problem] = _discover()
