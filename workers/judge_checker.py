"""Outside the sandbox, never loading learner code: `python -m workers.judge_checker PROBLEM` reads
the ranks' reports (JSON on stdin: {"reports": [text or null, one per rank]}), computes the expected
values in one process with the problem's verify.py and prints every check of every rank, and what
was wrong with any report, as one JSON object: {"checks": [...], "invalid": {rank: why}}.

A rank whose report is missing or malformed is checked as if it had reported nothing, so each of
its checks fails: the verdict always has every named check from every rank.
"""

from __future__ import annotations

import importlib
import json
import sys

import torch

from workers.problems import PROBLEMS
from workers.problems.report import Report, ReportError, decode


def check(problem_id: str, reports: list[str | None]) -> dict:
    world = PROBLEMS[problem_id].world_size
    verify = importlib.import_module(f"workers.problems.{problem_id}.verify").verify
    checks, invalid = [], {}
    for rank in range(world):
        text = reports[rank] if rank < len(reports) else None
        report = Report()
        if text is not None:
            try:
                report = decode(text.encode())
            except ReportError as exc:
                invalid[rank] = f"rank {rank}'s report was refused: {exc}"
        try:
            checks += verify(rank, world, report.outputs, report.calls)
        except Exception as exc:    # outputs of the right form but the wrong kind (a list for a tensor…)
            invalid[rank] = f"rank {rank}'s outputs could not be checked: {type(exc).__name__}: {str(exc)[:200]}"
            checks += verify(rank, world, {}, [])
    return {"checks": checks, "invalid": invalid}


def main(problem_id: str) -> None:
    torch.set_num_threads(1)
    reports = json.loads(sys.stdin.read())["reports"]
    print(json.dumps(check(problem_id, reports)))


if __name__ == "__main__":
    main(sys.argv[1])
