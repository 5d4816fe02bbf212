"""Your own program: any torch.distributed script, run unchanged on fresh ranks and traced.

The script arrives as text (`paralab run FILE.py`, the playground, or `POST /api/runs`); each rank
runs it as `__main__` with the environment torchrun gives (workers/script_rank.py). Torch-free.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams

MAX_SOURCE_BYTES = 40_000        # as sent to the launcher (JSON-escaped): its requests are at most 64 KiB
MAX_ARGS = 32
DEFAULT_PROGRAM = (Path(__file__).resolve().parent / "program.py").read_text()


class ScriptParams(LessonParams):
    source: str = Field(DEFAULT_PROGRAM, max_length=MAX_SOURCE_BYTES, json_schema_extra={"format": "python"},
                        description="the program every rank runs, as `python FILE.py ARGS`")
    args: list[Annotated[str, Field(max_length=500)]] = Field(default_factory=list, max_length=MAX_ARGS, description="its command-line arguments (sys.argv[1:])")
    filename: str = Field("program.py", min_length=4, max_length=64, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.py$",
                          description="the file's name, as the page and tracebacks show it")

    @field_validator("source")
    @classmethod
    def fits_the_launch_request(cls, source: str) -> str:
        size = len(json.dumps(source))
        if size > MAX_SOURCE_BYTES:
            raise ValueError(f"the program is too long: {size:,} bytes as sent to the ranks; at most {MAX_SOURCE_BYTES:,}")
        return source


EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
EXAMPLE_ORDER = ("ring", "deadlock", "ddp", "fsdp2", "tensor_parallel")   # the playground's starting programs


def examples() -> list[dict]:
    """[{id, filename, title (its docstring's first line), source}] in the playground's order."""
    found = []
    for name in EXAMPLE_ORDER:
        source = (EXAMPLES_DIR / f"{name}.py").read_text()
        title = source.split('"""')[1].split("\n")[0].strip() if source.startswith('"""') else name
        found.append({"id": name, "filename": f"{name}.py", "title": title, "source": source})
    return found


LESSON = Lesson(
    id="script",
    title="Your own program",
    summary="Any torch.distributed script, run unchanged on fresh ranks with the environment torchrun gives, "
            "traced call by call: its collectives, its errors and hangs, each rank's output.",
    params=ScriptParams,
    world_sizes=tuple(range(1, 65)),
    rank_runner="workers.script_rank",
)
