"""Chrome trace export (the JSON that Perfetto and chrome://tracing open): one `pid` per rank named
by metadata events, one `tid` lane per kind of activity, `X` slices, and flow arrows from each send
to the recv that took it."""

from __future__ import annotations

LANES = {"compute": 1, "collective": 2, "p2p": 3}
LANE_NAMES = {1: "compute", 2: "collectives", 3: "send/recv"}


def _slice_name(begin: dict) -> str:
    if begin["kind"] == "compute":
        mb = begin.get("microbatch")
        return begin["name"] if mb is None else f"{begin['name']}{mb}"
    if begin["kind"] == "p2p":
        return f"{begin['op']} {'→' if begin['op'] == 'send' else '←'} {begin.get('peer')}"
    return f"{begin['op']} ({begin.get('group')})"


def chrome_trace(run_id: str, events: list[dict]) -> dict:
    trace: list[dict] = []
    ranks = sorted({e["rank"] for e in events if e.get("rank") is not None})
    for rank in ranks:
        trace.append({"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": f"rank {rank}"}})
        trace.append({"ph": "M", "name": "process_sort_index", "pid": rank, "tid": 0, "args": {"sort_index": rank}})
        for tid, name in LANE_NAMES.items():
            trace.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": name}})

    open_spans: dict[tuple, list[dict]] = {}
    sends: dict[tuple, list[dict]] = {}
    recvs: list[tuple[dict, dict]] = []
    for event in events:
        lane = LANES.get(event.get("kind"))
        if lane is None or event.get("phase") not in ("begin", "end"):
            continue
        key = (event["rank"], lane, event.get("op") or event.get("name"), event.get("peer"))
        if event["phase"] == "begin":
            open_spans.setdefault(key, []).append(event)
            continue
        if not open_spans.get(key) and event.get("peer") is not None:
            key = key[:3] + (None,)   # a recv from any source learns its peer only at its end
        if not open_spans.get(key):
            continue
        begin = open_spans[key].pop(0)
        if begin.get("peer") is None and event.get("peer") is not None:
            begin = {**begin, "peer": event["peer"]}
        args = {k: begin[k] for k in ("group", "ranks", "cseq", "shape", "dtype", "bytes", "label", "site",
                                       "stage", "microbatch", "peer", "tag") if begin.get(k) is not None}
        slice_ = {"ph": "X", "name": _slice_name(begin), "cat": begin["kind"], "pid": event["rank"], "tid": lane,
                  "ts": begin["t"] * 1e6, "dur": max((event["t"] - begin["t"]) * 1e6, 0.001), "args": args}
        trace.append(slice_)
        if begin["kind"] == "p2p":
            if begin["op"] == "send":
                sends.setdefault((begin["rank"], begin.get("peer"), begin.get("tag", 0)), []).append(slice_)
            else:
                recvs.append((begin, slice_))

    for flow_id, (begin, recv_slice) in enumerate(recvs, start=1):
        queue = sends.get((begin.get("peer"), begin["rank"], begin.get("tag", 0)))
        if not queue:
            continue
        send_slice = queue.pop(0)
        trace.append({"ph": "s", "id": flow_id, "name": "send→recv", "cat": "p2p", "pid": send_slice["pid"],
                      "tid": send_slice["tid"], "ts": send_slice["ts"]})
        trace.append({"ph": "f", "bp": "e", "id": flow_id, "name": "send→recv", "cat": "p2p",
                      "pid": recv_slice["pid"], "tid": recv_slice["tid"], "ts": recv_slice["ts"] + recv_slice["dur"]})
    return {"traceEvents": trace, "displayTimeUnit": "ms", "otherData": {"run": run_id, "source": "paralab"}}
