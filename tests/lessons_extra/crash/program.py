import ctypes
import os
import time

import torch

from workers import comm

MALFORMED = {   # each sent by hand, past the constructors in workers/protocol.py
    "bytes_as_text": {"kind": "collective", "phase": "begin", "op": "all_reduce", "group": "world", "ranks": [0, 1],
                      "cseq": 9, "shape": [4], "dtype": "float32", "bytes": "16", "wire_bytes": 16, "site": None,
                      "label": "the malformed one"},
    "unknown_kind": {"kind": "telemetry", "label": "the malformed one"},
    "unknown_field": {"kind": "compute", "phase": "begin", "name": "F", "colour": "red", "label": "the malformed one"},
}


def run(lab, p):
    x = torch.ones(4) * lab.rank
    comm.all_reduce(x, label="a first all-reduce")
    if lab.rank == p.rank:
        if p.how == "raise":
            raise ZeroDivisionError("rank went dividing by zero on purpose")
        if p.how == "exit":
            os._exit(3)
        if p.how == "segfault":
            ctypes.string_at(0)
        if p.how == "hang":
            time.sleep(3600)
        if p.how == "print":
            print("a lesson printing to stdout", flush=True)
            os.write(1, b'{"pid": 999999999}\n')          # what a reply of the launcher looks like
        if p.how == "flood":                                  # 64 MiB, then a last line that must be kept
            block = b"x" * (1 << 20)
            for _ in range(64):
                os.write(1, block)
            os.write(2, b"\nthe last words of the flood\n")
        if p.how in MALFORMED:
            lab._tracer.emit({**MALFORMED[p.how], "rank": lab.rank, "t": lab._tracer.clock()})
            time.sleep(30)   # the server ends the run; nothing after the bad event is recorded
    comm.all_reduce(x, label="a second all-reduce")
