"""The communication check shared by the harnesses: which calls the learner's code really made."""

from __future__ import annotations


def performed(calls: list[dict], kinds=("collective",)) -> list[tuple]:
    """(op, group, shape) of each traced call's begin event, in order."""
    return [(e["op"], e["group"], e["shape"]) for e in calls
            if e.get("kind") in kinds and e.get("phase") == "begin"]


def describe(calls: list[tuple]) -> list[str]:
    return [f"{op} on {group} of {list(shape)}" for op, group, shape in calls]


def check_communication(lab, calls: list[dict], expected: list[tuple], detail: str) -> bool:
    """A `check` event comparing the calls made with the calls expected, in order."""
    made = performed(calls)
    passed = [(op, group, list(shape)) for op, group, shape in made] == \
             [(op, group, list(shape)) for op, group, shape in expected]
    lab.emit_event("check", name="communication", passed=passed, detail=detail,
                   expected=describe(expected), performed=describe(made))
    return passed
