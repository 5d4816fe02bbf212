"""How an event's `site` names a file: relative to this repository when inside it (a lesson's
`workers/lessons/tp_mlp/program.py`), else its whole resolved path (a torchrun job's script). The
Source panel shows a file under the same name, so that a site finds its line. Standard library only:
a torchrun job's sender uses it before torch is imported."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def shown_path(filename: str) -> str:
    path = Path(filename)
    try:
        path = path.resolve().relative_to(REPO_ROOT)
    except ValueError:
        pass
    return str(path)
