import time

import torch

from workers import comm

BAD = {   # each sent by hand, past the constructors in workers/protocol.py
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
        lab._tracer.emit({**BAD[p.what], "rank": lab.rank, "t": lab._tracer.clock()})
        time.sleep(30)   # the server ends the run; nothing after the bad event is recorded
    comm.all_reduce(x, label="a second all-reduce")
