"""A lesson with one planted bug: the lesson's package copied to a folder of its own under a new id,
one line of one file changed, and a live server that loads it through PARALAB_LESSONS_PATH (beside
the tests' extra lessons) — so a test can show that the lesson's checks catch the bug. Every bug in
PLANTED is planted in one folder, served by one server for the session (`planted_server` in
tests/app/conftest.py): a server start costs more than the runs the tests make on it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.conftest import EXTRA_LESSONS, LiveServer
from workers.lessons import LESSONS


# new id: (lesson, file, line, bug)
PLANTED = {
    # the reduce-scatter of the gradients sums them (the average forgotten): tests/app/test_zero_lesson.py
    "zero_summed": ("zero", "program.py", "return comm.reduce_scatter(padded, label=label) / world",
                    "return comm.reduce_scatter(padded, label=label)"),
    # rank 1 all-reduces one row fewer in g: a size mismatch, tests/app/test_hangs.py
    "tp_mlp_short": ("tp_mlp", "program.py",
                     'return comm.all_reduce(x.clone(), group=group, label="g forward: sum the partial outputs")',
                     'return comm.all_reduce(x[: x.shape[0] - torch.distributed.get_rank()].clone(), group=group, '
                     'label="g forward: sum the partial outputs")'),
}


def plant(folder: Path, lesson: str, new_id: str, file: str, line: str, bug: str) -> None:
    """Copy `lesson` to folder/new_id, with `line` (found exactly once in `file`) replaced by `bug`."""
    copy = folder / new_id
    shutil.copytree(LESSONS[lesson].dir, copy, ignore=shutil.ignore_patterns("__pycache__"))
    init = copy / "__init__.py"
    text = init.read_text()
    assert text.count(f'id="{lesson}"') == 1, f"{lesson}'s __init__.py does not name its id once"
    init.write_text(text.replace(f'id="{lesson}"', f'id="{new_id}"'))
    source = copy / file
    text = source.read_text()
    assert text.count(line) == 1, f"{line!r} is not in {file} exactly once"
    source.write_text(text.replace(line, bug))


def server_with(folder: Path, data_dir: Path, *args: str) -> LiveServer:
    """A server whose lessons include the planted copies in `folder` (`args`: its command-line options)."""
    path = os.pathsep.join([str(EXTRA_LESSONS), str(folder)])
    return LiveServer(data_dir, *args, env={"PARALAB_LESSONS_PATH": path}).start()
