"""Why a run hangs, in the manner of PyTorch's flight recorder: from the recorded events, each rank's
last collective begun and last completed per group, the collective the run is stuck in, what kind
of mismatch it is, and which ranks never arrived.

The same diagnosis explains a crash when the ranks' last collectives disagree: gloo aborts a rank
whose peers passed another size (at 2 ranks a shape mismatch is a SIGABRT, not a hang)."""

from __future__ import annotations

from app.messages import Message, say

SPANS = ("collective", "p2p")


def _call(event: dict) -> dict:
    return {key: event.get(key) for key in ("cseq", "op", "shape", "site", "peer", "tag") if event.get(key) is not None}


def rank_states(events: list[dict], world_size: int) -> dict[int, dict[str, dict]]:
    """rank → group → {"last_begun", "last_completed", "open"} (open: begun and not completed)."""
    states: dict[int, dict[str, dict]] = {r: {} for r in range(world_size)}
    for event in events:
        if event.get("kind") not in SPANS or event.get("rank") is None:
            continue
        group = event.get("group", "world") if event["kind"] == "collective" else "p2p"
        state = states.setdefault(event["rank"], {}).setdefault(group, {"open": []})
        if event["phase"] == "begin":
            state["last_begun"] = _call(event)
            state["open"].append(event)
        else:
            state["last_completed"] = _call(event)
            same = [b for b in state["open"] if b.get("cseq") == event.get("cseq") and b.get("op") == event.get("op")]
            # a recv from any source begins with peer None and learns its peer on `end`
            begun = next((b for b in same if b.get("peer") == event.get("peer")), None) \
                or next((b for b in same if b.get("peer") is None), None)
            if begun is not None:
                state["open"].remove(begun)
    return states


def open_calls(events: list[dict], world_size: int) -> list[dict]:
    return [call for groups in rank_states(events, world_size).values() for state in groups.values()
            for call in state["open"]]


def diagnose(events: list[dict], world_size: int) -> dict:
    """The hang report: `ranks`, `group`, `cseq`, `mismatch`, `missing` and a sentence."""
    states = rank_states(events, world_size)
    report_ranks = _report_ranks(states)
    stuck = [call for groups in states.values() for state in groups.values() for call in state["open"]]
    collectives = [c for c in stuck if c["kind"] == "collective"]
    if collectives:
        return {"ranks": report_ranks, **_collective_mismatch(collectives, events, states)}
    if stuck:
        return {"ranks": report_ranks, **_p2p_mismatch(stuck)}
    return {"ranks": report_ranks, "group": None, "cseq": None, "mismatch": "none", "missing": [],
            **say("hang.no_open_call", "no rank is inside a collective or send/recv").body("message")}


def explain_crash(error: dict, events: list[dict], world_size: int) -> dict:
    """A crash report, with the hang report's diagnosis added when the ranks were inside collectives
    that disagree in op or shape (what made gloo abort the rank); unchanged otherwise."""
    states = rank_states(events, world_size)
    stuck = [call for groups in states.values() for state in groups.values() for call in state["open"]
             if call["kind"] == "collective"]
    if not stuck:
        return error
    found = _collective_mismatch(stuck, events, states)
    if found["mismatch"] not in ("op mismatch", "size mismatch"):
        return error                     # a rank that died elsewhere leaves its peers waiting: a plain crash
    both = say("crash.diagnosed", "{crash}: {diagnosis}", crash=_nested(error), diagnosis=_nested(found))
    return {**error, **found, "ranks": _report_ranks(states), **both.body("message")}


def _nested(report: dict) -> dict:
    return {"code": report.get("code"), "params": report.get("params", {}), "message": report["message"]}


def _report_ranks(states: dict) -> dict:
    return {str(r): {g: {k: v for k, v in s.items() if k != "open"} for g, s in groups.items()}
            for r, groups in states.items()}


def _collective_mismatch(stuck: list[dict], events: list[dict], states: dict) -> dict:
    """Compare what every member began as the stuck collective's sequence number."""
    first = min(stuck, key=lambda c: (c["cseq"], c["group"]))
    group, cseq, members = first["group"], first["cseq"], first["ranks"]
    entered = {e["rank"]: e for e in events if e.get("kind") == "collective" and e.get("phase") == "begin"
               and e.get("group") == group and e.get("cseq") == cseq}
    missing = [r for r in members if r not in entered]
    base = {"group": group, "cseq": cseq, "missing": missing}
    ops = {r: e["op"] for r, e in entered.items()}
    if len(set(ops.values())) > 1:
        listing = ", ".join(f"rank {r}: {op}" for r, op in sorted(ops.items()))
        return {**base, "mismatch": "op mismatch", **say(
            "hang.op_mismatch", "the ranks called different collectives as collective #{cseq} of group '{group}': {listing}",
            cseq=cseq, group=group, listing=listing).body("message")}
    shapes = {r: e.get("shape") for r, e in entered.items()}
    if len({str(s) for s in shapes.values()}) > 1:
        listing = ", ".join(f"rank {r}: {s}" for r, s in sorted(shapes.items()))
        return {**base, "mismatch": "size mismatch", **say(
            "hang.size_mismatch", "the ranks passed different shapes to {op} (collective #{cseq} of group '{group}'): {listing}",
            op=first["op"], cseq=cseq, group=group, listing=listing).body("message")}
    if missing:
        waiting = sorted(c["rank"] for c in stuck if c["group"] == group and c["cseq"] == cseq)
        notes = _elsewhere(missing, states, group, _finished(events))
        params = dict(waiting=ranks_phrase(waiting), op=first["op"], cseq=cseq, group=group,
                      missing=ranks_phrase(missing), notes=notes)
        said = (say("hang.missing_ranks_one", "{waiting} waits in {op} (collective #{cseq} of group '{group}'); "
                    "{missing} never entered it ({notes})", **params) if len(waiting) == 1 else
                say("hang.missing_ranks", "{waiting} wait in {op} (collective #{cseq} of group '{group}'); "
                    "{missing} never entered it ({notes})", **params))
        return {**base, "mismatch": "missing ranks", **said.body("message")}
    return {**base, "mismatch": "unknown", **say(
        "hang.none_came_out", "every rank entered {op} (collective #{cseq} of group '{group}') and none came out",
        op=first["op"], cseq=cseq, group=group).body("message")}


def ranks_phrase(ranks: list[int]) -> Message:
    """"rank 0", "ranks 0 and 1", "ranks 0, 1 and 3": ranks in a sentence, not a Python list."""
    if len(ranks) == 1:
        return say("ranks.one", "rank {rank}", rank=ranks[0])
    return say("ranks.many", "ranks {ranks} and {last}", ranks=", ".join(map(str, ranks[:-1])), last=ranks[-1])


def _finished(events: list[dict]) -> set[int]:
    """Ranks that reached the end of their program."""
    return {e["rank"] for e in events if e.get("kind") == "rank" and e.get("status") == "finished"}


def _elsewhere(missing: list[int], states: dict, group: str, finished: set[int]) -> list[Message]:
    """Where each missing rank is: its last completed call in the group, and whether it finished."""
    notes = []
    for rank in missing:
        last = states.get(rank, {}).get(group, {}).get("last_completed")
        if rank in finished:
            note = (say("hang.last_completed_finished", "rank {rank} last completed #{cseq} {op} and finished its program",
                        rank=rank, cseq=last["cseq"], op=last["op"]) if last else
                    say("hang.completed_nothing_finished", "rank {rank} last completed nothing and finished its program",
                        rank=rank))
        else:
            note = (say("hang.last_completed", "rank {rank} last completed #{cseq} {op}", rank=rank, cseq=last["cseq"],
                        op=last["op"]) if last else
                    say("hang.completed_nothing", "rank {rank} last completed nothing", rank=rank))
        notes.append(note)
    return notes


def _matches(call: dict, other: dict) -> bool:
    return (other["op"] != call["op"] and other["rank"] == call.get("peer") and other.get("peer") == call["rank"]
            and other.get("tag", 0) == call.get("tag", 0))


def _p2p_mismatch(stuck: list[dict]) -> dict:
    """Send/recv calls left open with no partner: who waits for whom, with which tag."""
    unmatched = [c for c in stuck if not any(_matches(c, other) for other in stuck)]
    calls = [say("hang.waits_in_send", "rank {rank} waits in send to rank {peer} (tag {tag})",
                 rank=c["rank"], peer=c.get("peer"), tag=c.get("tag", 0)) if c["op"] == "send" else
             say("hang.waits_in_recv", "rank {rank} waits in recv from rank {peer} (tag {tag})",
                 rank=c["rank"], peer=c.get("peer"), tag=c.get("tag", 0))
             for c in unmatched or stuck]
    missing = sorted({c.get("peer") for c in unmatched if c.get("peer") is not None})
    return {"group": "p2p", "cseq": None, "mismatch": "unmatched send/recv", "missing": missing, **say(
        "hang.unmatched_p2p", "{calls}: no send and recv pair up (same ranks, same tag)", calls=calls).body("message")}
