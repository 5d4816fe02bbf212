"""Outside the sandbox, never loading learner code: `python -m workers.judge_checker PROBLEM` reads
the ranks' reports and the bytes the runner measured on the sandbox's loopback (JSON on stdin:
{"reports": [text or null, one per rank], "wire_bytes": n or null}), computes the expected
values in one process with the problem's verify.py and prints every check of every rank, and what
was wrong with any report, as one JSON object: {"checks": [...], "invalid": {rank: why}}.

A rank whose report is missing or malformed is checked as if it had reported nothing, so each of
its checks fails: the verdict always has every named check from every rank.

The calls in a report come from the tracer inside the learner's process, which the learner could
rewrite; the bytes on the loopback come from the kernel. So every rank also gets the check
"traffic": the ranks together sent at least what their reported calls would send (a report listing
the reference's calls without making them fails it).
"""

from __future__ import annotations

import importlib
import json
import sys

import torch

from workers.problems import PROBLEMS
from workers.problems.checks import performed, row
from workers.problems.report import Report, ReportError, decode

WIRE_SLACK = 0.9           # gloo's algorithms send at least the bandwidth-optimal bytes; headers only add


def traffic(world: int, reported: list[list[dict]], wire_bytes: int | None, raised: bool = False,
            hung: bool = False) -> list[dict]:
    """One row per rank: the bytes measured on the wire against those the reported calls send."""
    claimed = sum(call.wire_bytes(world) for calls in reported for call in performed(calls, ("collective", "p2p")))
    compared = False        # not compared: it neither passes nor fails the submission (said as such, not as a pass)
    if hung:                # a hung call was begun, never completed
        passed, detail = True, "the ranks' traffic was not compared: the judge stopped ranks that were hung inside calls"
    elif raised:            # a call that raised was begun, not made: the count proves nothing either way
        passed, detail = True, "the ranks' traffic was not compared: a rank's code raised before its calls were done"
    elif wire_bytes is None:
        passed, detail = True, "the ranks' traffic was not measured here (no network namespace of its own)"
    else:
        passed, compared = wire_bytes >= WIRE_SLACK * claimed, True
        detail = (f"the ranks' calls, as reported, send {claimed} bytes; the kernel counted {wire_bytes} on the "
                  "sandbox's loopback" + ("" if passed else " — the reported calls were not all made"))
    return [row(rank, "traffic", passed, detail, claimed_bytes=claimed, wire_bytes=wire_bytes, compared=compared)
            for rank in range(world)]


def check(problem_id: str, reports: list[str | None], wire_bytes: int | None = None) -> dict:
    world = PROBLEMS[problem_id].world_size
    verify = importlib.import_module(f"workers.problems.{problem_id}.verify").verify
    checks, invalid, reported, raised, hung = [], {}, [], False, False
    for rank in range(world):
        text = reports[rank] if rank < len(reports) else None
        report = Report()
        if text is not None:
            try:
                report = decode(text.encode())
            except ReportError as exc:
                invalid[rank] = f"rank {rank}'s report was refused: {exc}"
        reported.append(report.calls)
        raised = raised or report.error is not None
        hung = hung or report.hung
        try:
            checks += verify(rank, world, report.outputs, report.calls)
        except Exception as exc:    # outputs of the right form but the wrong kind (a list for a tensor…)
            invalid[rank] = f"rank {rank}'s outputs could not be checked: {type(exc).__name__}: {str(exc)[:200]}"
            checks += verify(rank, world, {}, [])
    return {"checks": checks + traffic(world, reported, wire_bytes, raised, hung), "invalid": invalid}


def main(problem_id: str) -> None:
    torch.set_num_threads(1)
    given = json.loads(sys.stdin.read())
    print(json.dumps(check(problem_id, given["reports"], given.get("wire_bytes"))))


if __name__ == "__main__":
    main(sys.argv[1])
