"""The corpus: real programs, unchanged, on two real gloo ranks, traced by paralab while torch's own
`CommDebugMode` watches. For every program the collectives paralab records equal CommDebugMode's
counts op by op (CommDebugMode counts no barrier and no send/recv: those are checked on their own),
each call is one begin/end pair of well-formed events, and each names the line in the program.

The programs (tests/workers/corpus/): plain `dist` calls, DDP, FSDP2 `fully_shard`, DTensor
`distribute_tensor` + `redistribute`, `parallelize_module` with Colwise/Rowwise/SequenceParallel, a
`torch.distributed.pipelining` GPipe schedule, and the seed chapter's check script (seed_tp/, as
the chapter prints it).
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.workers.helpers import REPO
from workers.protocol import problem

pytestmark = pytest.mark.slow   # one two-rank run of the whole corpus: about 20 s on two busy cores

CORPUS = REPO / "tests" / "workers" / "corpus"
PROGRAMS = {
    "plain_dist": CORPUS / "plain_dist.py",
    "ddp": CORPUS / "ddp.py",
    "fsdp2": CORPUS / "fsdp2.py",
    "dtensor": CORPUS / "dtensor.py",
    "tensor_parallel": CORPUS / "tensor_parallel.py",
    "pipelining": CORPUS / "pipelining.py",
    "tp_mlp_check": CORPUS / "seed_tp" / "tp_mlp_check.py",
}
WORLD = 2

# CommDebugMode's keys (c10d ops, and functional collectives under their legacy names) as protocol ops
COMM_DEBUG_OPS = {
    "allreduce_": "all_reduce", "allreduce_coalesced_": "all_reduce", "all_reduce": "all_reduce",
    "all_reduce_coalesced": "all_reduce",
    "allgather_": "all_gather", "_allgather_base_": "all_gather", "allgather_coalesced_": "all_gather",
    "allgather_into_tensor_coalesced_": "all_gather", "all_gather_into_tensor": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather",
    "reduce_scatter_": "reduce_scatter", "_reduce_scatter_base_": "reduce_scatter",
    "reduce_scatter_tensor_coalesced_": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "broadcast_": "broadcast", "broadcast": "broadcast", "reduce_": "reduce", "gather_": "gather",
    "scatter_": "scatter", "alltoall_": "all_to_all", "alltoall_base_": "all_to_all",
    "all_to_all_single": "all_to_all", "shard_dim_alltoall": "all_to_all",
}


def _free_ports(count: int) -> list[int]:
    """`count` distinct ports free now (each program's rendezvous gets its own), below the kernel's
    ephemeral range: the programs before one open connections on ephemeral ports, and one of those
    could take a later program's port before its rendezvous binds it (seen once: a rank died, its peer
    waited in the rendezvous)."""
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports: list[int] = []
    for port in random.sample(range(20_000, min(ephemeral_low, 32_768)), 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
        if len(ports) == count:
            return ports
    raise RuntimeError("no free ports below the ephemeral range")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[int, dict]:
    """rank → program → {events, comm_debug_mode, printed}: the whole corpus run once."""
    return _run_corpus(tmp_path_factory.mktemp("corpus"))


def _run_corpus(out: Path) -> dict[int, dict]:
    ports = ",".join(map(str, _free_ports(len(PROGRAMS))))
    env = {**os.environ, "WORLD_SIZE": str(WORLD), "LOCAL_WORLD_SIZE": str(WORLD), "MASTER_ADDR": "127.0.0.1",
           "GLOO_SOCKET_IFNAME": "lo"}
    logs = [out / f"rank{r}.log" for r in range(WORLD)]
    ranks = []
    for r, log in enumerate(logs):
        with log.open("w") as output:
            ranks.append(subprocess.Popen([sys.executable, "-m", "tests.workers.corpus.runner", str(out), ports,
                                           *map(str, PROGRAMS.values())], cwd=REPO,
                                          env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                                          stdout=output, stderr=subprocess.STDOUT))
    _wait_for(ranks, logs, timeout=180)
    return {r: json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD)}


def _wait_for(ranks: list[subprocess.Popen], logs: list[Path], timeout: float) -> None:
    """Both ranks done, or the test fails at once naming the rank that died or, after `timeout`, where
    each hung rank is (its threads' stacks, asked with SIGUSR1); no rank is left behind. (The ranks
    write to files: a pipe nobody reads while the test waits could fill and block its rank, and the peer
    with it.)"""
    deadline = time.monotonic() + timeout
    while any(rank.poll() is None for rank in ranks) and time.monotonic() < deadline:
        if any(rank.poll() not in (None, 0) for rank in ranks):
            break
        time.sleep(0.2)
    hung = [rank for rank in ranks if rank.poll() is None]
    for rank in hung:
        rank.send_signal(signal.SIGUSR1)
    time.sleep(1 if hung else 0)
    for rank in hung:
        rank.kill()
        rank.wait()
    if hung or any(rank.returncode != 0 for rank in ranks):
        report = "\n".join(f"--- rank {r}, exit {rank.returncode}{' (hung: killed)' if rank in hung else ''}:\n"
                           f"{logs[r].read_text(errors='replace')[-6000:]}" for r, rank in enumerate(ranks))
        pytest.fail(f"the corpus run did not end well:\n{report}")


def begins(events: list[dict], kind: str | None = None) -> list[dict]:
    return [e for e in events if e["phase"] == "begin" and (kind is None or e["kind"] == kind)]


@pytest.mark.parametrize("program", PROGRAMS)
def test_recorded_collectives_equal_comm_debug_modes_counts(corpus, program):
    for rank in range(WORLD):
        result = corpus[rank][program]
        recorded = Counter(e["op"] for e in begins(result["events"], "collective") if e["op"] != "barrier")
        watched = Counter()
        for key, count in result["comm_debug_mode"].items():
            watched[COMM_DEBUG_OPS[key.rsplit(".", 1)[-1]]] += count
        assert recorded == watched, f"rank {rank}"


@pytest.mark.parametrize("program", PROGRAMS)
def test_each_call_is_one_well_formed_begin_end_pair_at_the_programs_line(corpus, program):
    for rank in range(WORLD):
        events = corpus[rank][program]["events"]
        assert [problem(e) for e in events if problem(e)] == []
        calls = Counter((e["kind"], e["op"], e["group"], e.get("cseq"), e["t"]) for e in begins(events))
        ends = [e for e in events if e["phase"] == "end"]
        assert len(ends) == len(begins(events)) == len(calls) > 0
        for end in ends:
            assert end["t"] >= end["t_call"] and end["duration"] >= 0
        folder = str(PROGRAMS[program].parent.relative_to(REPO))
        assert {e["site"].rsplit("/", 1)[0] for e in events} == {folder}, "every site is a line of the program"


def test_plain_dist_records_every_call_once(corpus):
    ops = [e["op"] for e in begins(corpus[0]["plain_dist"]["events"])]
    assert ops == ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather", "reduce_scatter",
                   "all_to_all", "scatter", "gather", "all_reduce", "barrier", "send", "send"]
    assert [e["op"] for e in begins(corpus[1]["plain_dist"]["events"], "p2p")] == ["recv", "recv"]
    assert all("torch_op" not in e for e in corpus[0]["plain_dist"]["events"]), "dist.* calls: the wrappers record them"


def test_ddp_reducers_all_reduce_is_recorded_at_the_backward_line(corpus):
    events = begins(corpus[0]["ddp"]["events"])
    grads = [e for e in events if e["op"] == "all_reduce"]
    assert [(e["torch_op"], e["site"]) for e in grads] == [("c10d.allreduce_", "tests/workers/corpus/ddp.py:12")] * 2
    assert grads[0]["bytes"] == 4 * (8 * 16 + 16 + 16 * 4 + 4), "one bucket: every gradient"


def test_fsdp2_gathers_parameters_and_scatters_gradients(corpus):
    events = begins(corpus[0]["fsdp2"]["events"])
    assert Counter(e["op"] for e in events) == {"all_gather": 4, "reduce_scatter": 2}
    assert all(e["ranks"] == [0, 1] for e in events)


def test_dtensor_collectives_carry_the_mesh_and_the_placements(corpus):
    events = [e for e in begins(corpus[1]["dtensor"]["events"]) if "placements" in e]
    assert [(e["op"], e["placements"]["before"], e["placements"]["after"]) for e in events] == [
        ("all_gather", ["Shard(0)"], ["Replicate()"]),
        ("all_gather", ["Shard(1)"], ["Shard(0)"]),     # gloo has no all-to-all: torch gathers and chunks
        ("all_reduce", ["Partial()"], ["Replicate()"]),
        ("reduce_scatter", ["Partial()"], ["Shard(0)"]),
        ("all_gather", ["Shard(0)"], ["Replicate()"]),
    ]
    assert events[0]["mesh"] == {"shape": [2], "ranks": [0, 1], "dim_names": ["tp"], "dim": 0}
    assert events[0]["placements"]["global_shape"] == [8, 4]


def test_parallelize_modules_sequence_parallel_gathers_and_scatters_the_sequence(corpus):
    events = [e for e in begins(corpus[0]["tensor_parallel"]["events"]) if "placements" in e]
    assert [(e["op"], e["placements"]["before"], e["placements"]["after"]) for e in events] == [
        ("all_gather", ["Shard(0)"], ["Replicate()"]),      # forward: into the colwise layer
        ("reduce_scatter", ["Partial()"], ["Shard(0)"]),    # forward: out of the rowwise layer
    ] * 2   # backward: the gradient gathered into the rowwise layer, scattered out of the colwise one


def test_pipelinings_sends_meet_receives(corpus):
    sent = [(e["shape"], e["peer"]) for e in begins(corpus[0]["pipelining"]["events"], "p2p") if e["op"] == "send"]
    received = [(e["shape"], e["peer"]) for e in begins(corpus[1]["pipelining"]["events"], "p2p") if e["op"] == "recv"]
    assert [shape for shape, _ in sent] == [shape for shape, _ in received]
    assert sent.count(([2, 8], 1)) == 4, "one activation per microbatch"


def test_the_seed_chapters_check_script_passes_unchanged(corpus):
    assert corpus[0]["tp_mlp_check"]["printed"].count("True") == 2
