"""The judge on real ranks in the real sandbox: references pass, wrong solutions fail the right
check, bad submissions are refused before anything runs."""

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from workers import judge as judge_module, sandbox
from workers.judge import MAX_CODE_BYTES, judge, screen
from workers.judge import main as judge_main
from tests.problems.wrong import wrong_solution
from workers.problems import PROBLEMS

REPO = Path(__file__).resolve().parents[2]
needs_sandbox = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")

# each wrong solution and the checks it must fail (it may fail others too); ring_allreduce's reference
# passing and ring_allreduce/chunk_index failing "sum" are judged by the command-line test below
WRONG_SOLUTIONS = {
    "fg_operators/no_backward_allreduce": {"input gradient dX", "communication"},
    "fg_operators/swapped": {"output Y", "W1 shard gradient"},
    "sp_mlp_block/backward_not_summed": {"input gradient dX rows", "LayerNorm weight gradient"},
    "sp_mlp_block/all_reduce_then_slice": {"communication"},
    "pp_1f1b_loop/gpipe_order": {"1F1B order", "activations held"},
    "pp_1f1b_loop/warmup_too_long": {"1F1B order", "activations held"},
    "ring_allreduce/uses_all_reduce": {"communication"},
    "fsdp_wrapper/all_reduce_then_slice": {"communication"},
    "fsdp_wrapper/no_mean": {"gradient shard"},
    "moe_dispatch/combine_in_sorted_order": {"combined"},
    "ring_attention/average_blocks": {"output"},
    "ring_attention/all_gather_kv": {"communication"},
    "moe_dispatch/even_splits": {"combined", "tokens at this rank's expert"},
}


def test_the_four_problems_are_listed():
    assert {"sp_mlp_block", "fg_operators", "pp_1f1b_loop", "ring_allreduce", "fsdp_wrapper",
            "moe_dispatch", "ring_attention"} <= set(PROBLEMS)


@needs_sandbox
@pytest.mark.timeout(600)        # nineteen judgments, two at a time: about 2 min on an idle 2-core machine
def test_reference_solutions_pass_and_wrong_ones_fail_the_right_checks():
    jobs = [(p, (PROBLEMS[p].dir / "reference.py").read_text(), None) for p in PROBLEMS if p != "ring_allreduce"]
    jobs += [(name.split("/")[0], wrong_solution(name), must_fail) for name, must_fail in WRONG_SOLUTIONS.items()]
    with ThreadPoolExecutor(2) as pool:
        verdicts = list(pool.map(lambda job: judge(job[0], job[1]), jobs))
    for (problem, _, must_fail), verdict in zip(jobs, verdicts):
        failed = {c["name"] for c in verdict.checks if not c["passed"]}
        if must_fail is None:
            assert verdict.status == "passed", (problem, verdict)
            assert verdict.checks and not failed
        else:
            assert verdict.status == "failed", (problem, verdict)
            assert must_fail <= failed, (problem, failed)


@pytest.mark.parametrize("code, reason", [
    ("def f(:\n", "does not parse: line 1"),
    ("import os\n", "importing 'os' is not allowed"),
    ("from subprocess import run\n", "importing 'subprocess' is not allowed"),
    ("import torch\n", "does not define CopyToTensorParallel, ReduceFromTensorParallel"),
    ("#" * (MAX_CODE_BYTES + 1), "the limit is"),
])
def test_bad_submissions_are_refused_before_anything_runs(code, reason):
    assert reason in screen("fg_operators", code)
    verdict = judge("fg_operators", code)
    assert verdict.status == "refused" and verdict.exit_code == 2 and reason in verdict.reason


def test_an_unknown_problem_is_refused():
    assert "unknown problem 'nope'" in judge("nope", "x = 1").reason


@needs_sandbox
def test_the_command_line_prints_each_check_and_exits_with_the_verdict(tmp_path, capsys):
    """Also the verdicts on ring_allreduce that the test above leaves to this one: the reference passes
    every check (exit 0), chunk_index fails "sum". The judged two through the command line's `main`
    in this process (its warm checker), the refused one through `python -m workers.judge`."""
    def cli(problem, path):
        code = judge_main([problem, str(path)])
        return code, capsys.readouterr().out
    status, out = cli("ring_allreduce", PROBLEMS["ring_allreduce"].dir / "reference.py")
    assert status == 0 and "PASS sum" in out and "PASS communication" in out
    (tmp_path / "wrong.py").write_text(wrong_solution("ring_allreduce/chunk_index"))
    status, out = cli("ring_allreduce", tmp_path / "wrong.py")
    assert status == 1 and "FAIL sum" in out and "got" in out and "expected" in out
    (tmp_path / "bad.py").write_text("import socket\n")
    refused = subprocess.run([sys.executable, "-m", "workers.judge", "ring_allreduce", str(tmp_path / "bad.py")],
                             capture_output=True, text=True, cwd=REPO, timeout=180)
    assert refused.returncode == 2 and refused.stdout.strip().splitlines()[-1].startswith("refused: ")


def test_without_a_sandbox_learner_code_is_refused_unless_the_operator_allows_it(tmp_path, monkeypatch, capsys):
    """bubblewrap missing from PATH: refused (exit 2); PARALAB_ALLOW_UNSANDBOXED=1 runs it anyway
    (the command line's `main`, in this process, for the judged one)."""
    env = {"PATH": str(tmp_path), "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    reference = PROBLEMS["ring_allreduce"].dir / "reference.py"
    command = [sys.executable, "-m", "workers.judge", "ring_allreduce", str(reference)]
    refused = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=180)
    assert refused.returncode == 2
    assert "no sandbox is available" in refused.stdout.strip().splitlines()[-1]
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("PARALAB_ALLOW_UNSANDBOXED", "1")
    assert not sandbox.available()
    status, out = judge_main(["ring_allreduce", str(reference)]), capsys.readouterr().out
    assert status == 0, out
    assert "PASS sum" in out


# each attempt to forge a verdict (issue #10), as a learner would submit it, and what the verdict must say
ATTACKS = {
    "attack_fake_checks.py": "ended without reporting",  # which rank: timing (one still meeting a gone peer echoes)
    "attack_patch_check.py": None,                        # runs; the checks outside fail it
    "attack_rewrite_results.py": None,
    "attack_import_reference.py": "your code raised while loading",
}


@needs_sandbox
@pytest.mark.timeout(300)
def test_forged_verdicts_do_not_pass():
    """Fake check lines printed at load time, patched checks, a helper rewriting results, the
    reference solution imported: none passes, each fails with a clear reason or failed checks."""
    codes = {name: (REPO / "tests/problems" / name).read_text() for name in ATTACKS}
    with ThreadPoolExecutor(2) as pool:
        verdicts = dict(zip(codes, pool.map(lambda code: judge("fg_operators", code), codes.values())))
    for name, reason in ATTACKS.items():
        verdict = verdicts[name]
        assert verdict.status == "failed", (name, verdict)
        failed = {c["name"] for c in verdict.checks if not c["passed"]}
        assert {"output Y", "input gradient dX"} <= failed, (name, verdict)
        assert "forged" not in str(verdict.checks)
        if reason:
            assert reason in verdict.reason, (name, verdict.reason)


SECRETS = {"PARALAB_SECRET_KEY": "s3cret-key-6f1d", "PARALAB_ADMIN_PASSWORD": "admin-pw-91ac"}
STEAL = """
import torch
os = __import__("os")
found = [f"{k}={v}" for k, v in os.environ.items()]
for path in ["/proc/1/environ", "/proc/self/environ", *[f"/proc/{p}/environ" for p in os.listdir("/proc") if p.isdigit()]]:
    try:
        found.append(open(path, "rb").read().decode(errors="replace"))
    except OSError:
        pass
print(found)
leaked = [part for text in found for part in text.split("\\0") if "PARALAB" in part]
raise RuntimeError(f"PATH={os.environ.get('PATH')} leaked: {leaked}")
"""


@needs_sandbox
def test_no_server_secret_reaches_a_verdict_or_the_command_line(tmp_path, monkeypatch, capsys):
    """Learner code reads every environment it can reach and raises an error carrying it: the
    sandbox started with a clean one, so the reason shows none of the secrets of the process that
    judged it (the command line's `main` here, calling the `judge` the server calls), nor does
    anything printed."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "steal.py").write_text(STEAL + "\n" + wrong_solution("fg_operators/swapped"))
    status = judge_main(["fg_operators", str(tmp_path / "steal.py")])
    printed = capsys.readouterr()
    reason = printed.out.strip().splitlines()[-1]
    assert status == 1 and reason.startswith("failed: ") and "RuntimeError" in reason
    assert "PATH=/usr/bin:/bin leaked: []" in reason              # it read an environment: the clean one
    assert "FAIL output Y" in printed.out                           # the checks were printed too
    assert not any(value in printed.out + printed.err for value in SECRETS.values())


def test_unsandboxed_code_does_not_get_the_servers_environment(monkeypatch):
    """Even where the operator allows code without a sandbox, it starts with a clean environment."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sandbox, "available", lambda: False)
    code = "import torch\nos = __import__('os')\nraise RuntimeError(str(dict(os.environ)))\n" \
        + wrong_solution("fg_operators/swapped")
    verdict = judge("fg_operators", code, allow_unsandboxed=True)
    assert verdict.status == "failed" and "RuntimeError" in verdict.reason and "PATH" in verdict.reason
    assert not any(value in str(verdict) for value in SECRETS.values())


def _ring_report(rank: int, world: int = 4, error: str | None = None) -> str:
    """What an honest rank of ring_allreduce sends: the right sum, 2(p−1) sends to its right."""
    import torch

    from workers.problems.report import encode
    from workers.problems.ring_allreduce.harness import N_PER_RANK, rank_input
    total = sum(rank_input(r, world) for r in range(world))
    sends = [{"kind": "p2p", "op": "send", "group": "world", "shape": [N_PER_RANK], "peer": (rank + 1) % world}] * 6
    return encode({"sum": total.to(torch.float32)}, sends, error).decode()


def test_the_checker_gives_every_rank_all_its_checks_whatever_the_ranks_sent():
    """A pass needs every named check from every rank: a rank that sent nothing, or something that is
    not a report, still has each of its checks — failed — and the reason why."""
    from workers.judge_checker import check
    honest = check("ring_allreduce", [_ring_report(r) for r in range(4)])
    assert len(honest["checks"]) == 12 and all(c["passed"] for c in honest["checks"]) and not honest["invalid"]
    forged = '{"outputs": {"sum": {"shape": [12], "dtype": "float32", "values": "all good"}}, "calls": []}'
    checked = check("ring_allreduce", [_ring_report(0), None, forged, "[kind: check, passed: true]"])
    by_rank = {(c["rank"], c["name"]): c["passed"] for c in checked["checks"]}
    assert sorted(by_rank) == [(r, n) for r in range(4) for n in ("communication", "sum", "traffic")]
    assert by_rank[(0, "sum")] and not any(by_rank[(r, "sum")] for r in (1, 2, 3))
    assert "output 'sum': its values do not fill its shape [12]" in checked["invalid"][2]
    assert "it is not JSON" in checked["invalid"][3]


def test_the_warm_checker_forks_each_check_and_outlives_a_kill():
    """The checker's torch is imported once: two checks are two children of one server; a check
    is killed on request (a judgment stopped), only its own children; a server that died is started
    again by the next check."""
    from workers.warm_checker import WarmChecker
    warm = WarmChecker()
    reports = json.dumps({"reports": [_ring_report(r) for r in range(4)], "wire_bytes": None}).encode()
    first, second = warm.check("ring_allreduce"), warm.check("ring_allreduce")
    server = warm._server.pid
    assert {_parent(first.pid), _parent(second.pid)} == {server} and first.pid != second.pid
    for check in (first, second):
        outcome = check.run(reports, 60, None, 1 << 20)
        checks = json.loads(outcome.stdout)["checks"]
        assert outcome.reason is None and len(checks) == 12 and all(c["passed"] for c in checks)
    stopped = warm.check("ring_allreduce")                        # waiting for its reports
    assert warm.request(f"kill {stopped.pid}") == "done"
    deadline = time.monotonic() + 10
    while _state(stopped.pid) not in ("Z", None):                  # ended (reaped at the next request)
        assert time.monotonic() < deadline, _state(stopped.pid)
        time.sleep(0.01)
    assert stopped.run(b"", 60, None, 1 << 20).stdout == ""
    assert warm.request("kill 1") == "refused"                    # only a child of its own
    os.kill(server, 9)
    again = warm.check("ring_allreduce")
    try:
        assert warm._server.pid != server and _parent(again.pid) == warm._server.pid
        assert json.loads(again.run(reports, 60, None, 1 << 20).stdout)["checks"]
    finally:
        warm._stop_server()                                        # this test's own server, not the judge's


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_reported_calls_the_wire_did_not_carry_fail_the_traffic_check():
    """The calls come from inside the learner's process; the bytes on the sandbox's loopback from the
    kernel: a report claiming more than crossed the wire fails "traffic", whatever its numbers."""
    from workers.judge_checker import check
    reports = [_ring_report(r) for r in range(4)]
    from workers.problems.ring_allreduce.harness import N_PER_RANK
    claimed = 4 * 6 * N_PER_RANK * 4                                  # four ranks, six sends of a float32 chunk each
    carried = {c["rank"]: c for c in check("ring_allreduce", reports, wire_bytes=claimed + 3000)["checks"]
               if c["name"] == "traffic"}
    quiet = [c for c in check("ring_allreduce", reports, wire_bytes=2744)["checks"] if c["name"] == "traffic"]
    assert sorted(carried) == [0, 1, 2, 3] and all(c["passed"] and c["compared"] for c in carried.values())
    assert len(quiet) == 4 and not any(c["passed"] for c in quiet)
    assert f"send {claimed} bytes; the kernel counted 2744" in quiet[0]["detail"]
    assert "not all made" in quiet[0]["detail"]


@needs_sandbox
def test_a_forged_list_of_calls_fails_on_the_bytes_the_wire_carried():
    """The ring's sum computed in one process and the reference's sends written into the rank's
    list of calls: the numbers and the reported pattern pass, the traffic measured outside does not."""
    verdict = judge("ring_allreduce", (REPO / "tests/problems/attack_forge_calls.py").read_text())
    by_name = {c["name"]: c for c in verdict.checks}
    assert verdict.status == "failed" and by_name["sum"]["passed"] and by_name["communication"]["passed"]
    assert not by_name["traffic"]["passed"] and "not all made" in by_name["traffic"]["detail"]


def test_the_communication_check_names_the_first_call_that_differs_and_the_bytes():
    """An all-reduce where the reference reduce-scatters: the check says which call, what the
    reference makes there, and how many bytes each sent (the ring's 2(p−1)/p against (p−1)/p)."""
    from workers.problems.checks import communication
    gather = {"kind": "collective", "op": "all_gather", "group": "dp", "shape": [128], "peer": None}
    made = [gather, {**gather, "op": "all_reduce", "shape": [512]}]
    wanted = [("all_gather", "dp", [128]), ("reduce_scatter", "dp", [512])]
    row = communication(0, made, wanted, "the pattern", world=4)
    assert not row["passed"]
    assert ("call 2: all_reduce on dp of [512] where the reference makes reduce_scatter on dp of [512]; "
            "it sent 4608 bytes, the reference 3072") in row["detail"]
    assert communication(0, made[:1], wanted, "the pattern", world=4)["detail"].endswith(
        "call 2: the reference makes reduce_scatter on dp of [512], this rank made nothing more; it sent 1536 bytes, the reference 3072")
    assert communication(0, [gather, {**made[1], "op": "reduce_scatter"}], wanted, "the pattern", world=4)["passed"]


@pytest.mark.parametrize("report, why", [
    (b"\x80\x04\x95pickle", "it is not JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "it is not JSON"),
    (b'{"outputs": {}}', "it lacks its outputs or its calls"),
    (b'{"outputs": {"y": {"shape": [2], "dtype": "object", "values": [1, 2]}}, "calls": []}', "dtype 'object' is not one of"),
    (b'{"outputs": {"y": {"nested": {}}}, "calls": []}', "output 'y': dtype 'None' is not one of"),
    (b'{"outputs": {"y": [{"a": 1}]}, "calls": []}', "output 'y' is neither a tensor nor a fact"),
    (b'{"outputs": {}, "calls": [{"kind": "exec", "op": "rm"}]}', "a call is not a collective or a send/recv"),
    (b'{"outputs": {}, "calls": []}' + b" " * (1 << 20), "it is over 1048576 bytes"),
])
def test_a_report_is_data_and_anything_else_is_refused_saying_why(report, why):
    from workers.problems.report import ReportError, decode
    with pytest.raises(ReportError) as refused:
        decode(report)
    assert why in str(refused.value)


def test_a_deadlock_is_stopped_early_with_the_hang_report_naming_ranks_calls_and_lines():
    """A ring whose last rank skips its send/recv: ranks 0–2 block in send; the judge stops them
    within seconds (not gloo's 30 s) and says who waits in which call at which line of the learner's
    file, and that rank 3 finished; the traffic of calls that never completed is not held against it;
    the events kept for the judged run end inside the send each hung rank sat in."""
    code = (REPO / "tests/problems/deadlock_ring.py").read_text()
    send_line = next(n for n, line in enumerate(code.splitlines(), 1) if "dist.send(" in line)
    verdict = judge("ring_allreduce", code)
    assert verdict.status == "failed"
    first, *ranks = verdict.reason.splitlines()
    assert first.startswith("the ranks are deadlocked: ranks 0, 1 and 2 sat inside a call"), first
    for rank in (0, 1, 2):
        assert ranks[rank].startswith(f"rank {rank}: waits in send to rank {rank + 1} at your line {send_line}: dist.send(")
    assert ranks[3].startswith("rank 3: finished its program")
    traffic = next(c for c in verdict.checks if c["name"] == "traffic")
    assert traffic["compared"] is False and "hung inside calls" in traffic["detail"]      # neither pass nor fail
    assert all(c["compared"] for c in verdict.checks if c["name"] != "traffic")
    # the run kept to step through ends, for each hung rank, inside the send it sat in: begun, never ended
    for rank in (0, 1, 2):
        last = [e for e in verdict.events if e["rank"] == rank and e["kind"] == "p2p"][-1]
        assert (last["op"], last["phase"], last["peer"], last["site"]) == ("send", "begin", rank + 1, f"submission.py:{send_line}")


def test_the_rank_that_raised_is_named_not_the_peers_that_lost_their_connection_to_it():
    """Rank 2 raises mid-ring; ranks 0, 1 and 3 then raise "connection closed by peer": the reason is
    rank 2's own error at its line."""
    verdict = judge("ring_allreduce", (REPO / "tests/problems/raises_mid_ring.py").read_text())
    assert verdict.status == "failed"
    assert verdict.reason.startswith("rank 2: ValueError: planted: rank 2 gives up (your line 13:"), verdict.reason


@needs_sandbox
def test_a_hang_after_a_rank_exited_gets_the_hang_report():
    """The runner's control message names ranks that exited (a status each) beside the hung ones: the verdict
    is the hang report on the learner's lines (a suite under load saw a crash here: the learner's code
    replaced by an exit status)."""
    code = (REPO / "tests/problems/deadlock_ring.py").read_text()
    control = json.dumps({"exits": {"3": 0}, "hung": [0, 1, 2], "hang_s": 10}).encode()
    hung = json.dumps({"hung": True, "trace": []}).encode()
    finished = json.dumps({"trace": []}).encode()
    judge_module.CHECKER.start()
    verdict = judge_module._verdict("ring_allreduce", code, sandbox.Outcome(0, "", "", None), control,
                                    [hung, hung, hung, finished], [], sandbox.Limits(), None)
    assert verdict.status == "failed"
    assert verdict.reason.startswith("the ranks did not finish within 10 s"), verdict.reason
    assert verdict.reason.splitlines()[4].startswith("rank 3: finished its program"), verdict.reason


def test_a_rank_that_ended_is_the_reason_not_its_peers_echo():
    """A rank that ends at load time (the forged-checks attack's `os._exit`) leaves its peers raising in
    gloo's rendezvous or on a closed connection: the verdict names the rank that ended, whichever peer's
    echo came first; a peer's echo is the reason only when nothing else is."""
    rendezvous = "your code raised while loading: RuntimeError: Gloo connectFullMesh failed with [...]"
    closed = "RuntimeError: [../gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:4242"
    report = lambda error: json.dumps({"error": error})   # noqa: E731
    limits = sandbox.Limits()
    reason = judge_module._first_problem([None, report(rendezvous), report(closed), None], [], {}, {}, limits, "")
    assert reason == "rank 0 ended without reporting (killed?)"
    raised = report("ValueError: shapes differ")
    assert judge_module._first_problem([report(closed), raised], [], {}, {}, limits, "") == "rank 1: ValueError: shapes differ"
    assert judge_module._first_problem([report(closed), "{}"], [], {}, {}, limits, "") == f"rank 0: {closed}"
    # the peers of a rank that ended while loading may sit in the rendezvous until found hung: still its end
    hung = json.dumps({"hung": True, "trace": []})
    ended = {"exits": {"0": 0}, "hung": [1, 2, 3], "hang_s": 10}
    assert judge_module._first_problem([None, hung, hung, hung], [1, 2, 3], ended, {}, limits, "") == \
        "rank 0 ended without reporting (killed?)"
    # or by ranks that raised while loading (the reference solution's import refused), one rank left running
    loading = report("your code raised while loading: ImportError: no reference here")
    ended = {"exits": {"0": 1, "1": 1, "2": 1}, "hung": [3], "hang_s": 75}
    assert judge_module._first_problem([loading, loading, loading, hung], [3], ended, {}, limits, "") == \
        "your code raised while loading: ImportError: no reference here"
