"""The judge's hang report: from what each rank traced before the runner found it hung (each call
begun and ended, with the learner's line), the deadlock lesson's diagnosis — which rank waits in
which call, who never arrived, each rank's last completed call — with the lines of the learner's file.

The traces come from the learner's processes, so this is diagnosis only, never a verdict: a forged
trace misleads no one but its author."""

from __future__ import annotations

import json

from app.flight_recorder import diagnose, ranks_phrase

KEYS = {"kind": str, "phase": str, "group": str, "ranks": list, "cseq": int, "op": str, "shape": list,
        "peer": int, "tag": int, "line": int}
MAX_EVENTS = 4096
LINE_CHARS = 100


def hang_report(texts: list[str | None], code: str, ended: dict) -> str:
    """Why the runner stopped the ranks (`ended`: its control message), the diagnosis, and one line
    per rank."""
    world = len(texts)
    bodies = [_body(text) for text in texts]
    traces = {rank: _trace(body) for rank, body in enumerate(bodies)}
    hung = [r for r, body in enumerate(bodies) if body.get("hung") is True]
    finished = [r for r, body in enumerate(bodies) if traces[r] is not None and r not in hung and "error" not in body]
    events = [{**e, "rank": r} for r, trace in traces.items() for e in trace or []]
    events += [{"kind": "rank", "status": "finished", "rank": r} for r in finished]
    diagnosis = diagnose(events, world)["message"]
    why = stopped_because(bool(ended.get("stalled")), ended.get("stall_s"), hung or list(ended.get("hung", [])),
                          ended.get("hang_s"))
    lines = [f"{why}: {diagnosis}."]
    lines += [_rank_line(rank, traces[rank], rank in hung, "error" in bodies[rank], code.splitlines())
              for rank in range(world)]
    return "\n".join(lines)


def stopped_because(stalled: bool, stall_s, hung: list[int], run_s) -> str:
    if stalled and isinstance(stall_s, (int, float)):
        return (f"the ranks are deadlocked: {ranks_phrase(hung)} sat inside a call with nothing moving for "
                f"{stall_s:g} s, so the judge stopped them")
    return f"the ranks did not finish within {run_s} s ({ranks_phrase(hung)} still running)"


def _body(text: str | None) -> dict:
    try:
        body = json.loads(text) if text else {}
    except (ValueError, RecursionError):
        return {}
    return body if isinstance(body, dict) else {}


def _trace(body: dict) -> list[dict] | None:
    """A rank's traced events, each field of the type it should have; None without any."""
    trace = body.get("trace")
    if not isinstance(trace, list):
        return None
    return [{k: e[k] for k, kind in KEYS.items() if isinstance(e.get(k), kind) and not isinstance(e.get(k), bool)}
            for e in trace[-MAX_EVENTS:] if isinstance(e, dict)]


def _rank_line(rank: int, trace: list[dict] | None, hung: bool, raised: bool, source: list[str]) -> str:
    if trace is None:
        return f"rank {rank}: sent no trace"
    begun = [e for e in trace if e.get("phase") == "begin"]
    ended = [e for e in trace if e.get("phase") == "end"]
    for e in ended:                                   # what is left of `begun` is still open
        match = next((b for b in begun if b.get("op") == e.get("op") and b.get("cseq") == e.get("cseq")
                      and b.get("peer") in (e.get("peer"), None)), None)
        if match is not None:
            begun.remove(match)
    last = f"last completed {_call(ended[-1], source)}" if ended else "completed no call"
    if hung and begun:
        return f"rank {rank}: waits in {_call(begun[-1], source)}; {last}"
    state = "was running outside any call" if hung else "raised" if raised else "finished its program"
    return f"rank {rank}: {state}; {last}"


def _call(event: dict, source: list[str]) -> str:
    op = event.get("op", "?")
    if event.get("kind") == "p2p" and event.get("peer") is not None:
        op += f" {'to' if op in ('send', 'isend') else 'from'} rank {event['peer']}"
    elif event.get("kind") == "collective" and event.get("cseq") is not None:
        op += f" #{event['cseq']} of group {event.get('group', 'world')!r}"
    line = event.get("line")
    if line is None:
        return op + " (not from your file)"
    text = source[line - 1].strip()[:LINE_CHARS] if 0 < line <= len(source) else ""
    return f"{op} at your line {line}" + (f": {text}" if text else "")
