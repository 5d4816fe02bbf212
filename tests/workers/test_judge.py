"""The judge on real ranks in the real sandbox: references pass, wrong solutions fail the right
check, bad submissions are refused before anything runs."""

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from workers import sandbox
from workers.judge import MAX_CODE_BYTES, judge, screen
from tests.problems.wrong import wrong_solution
from workers.problems import PROBLEMS

REPO = Path(__file__).resolve().parents[2]
needs_sandbox = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap is not available")

# each wrong solution and the checks it must fail (it may fail others too)
WRONG_SOLUTIONS = {
    "fg_operators/no_backward_allreduce": {"input gradient dX", "communication"},
    "fg_operators/swapped": {"output Y", "W1 shard gradient"},
    "sp_mlp_block/backward_not_summed": {"input gradient dX rows", "LayerNorm weight gradient"},
    "sp_mlp_block/all_reduce_then_slice": {"communication"},
    "pp_1f1b_loop/gpipe_order": {"1F1B order", "activations held"},
    "pp_1f1b_loop/warmup_too_long": {"1F1B order", "activations held"},
    "ring_allreduce/chunk_index": {"sum"},
    "ring_allreduce/uses_all_reduce": {"communication"},
}


def test_the_four_problems_are_listed():
    assert {"sp_mlp_block", "fg_operators", "pp_1f1b_loop", "ring_allreduce"} <= set(PROBLEMS)


@needs_sandbox
def test_reference_solutions_pass_and_wrong_ones_fail_the_right_checks():
    jobs = [(p, (PROBLEMS[p].dir / "reference.py").read_text(), None) for p in PROBLEMS]
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
def test_the_command_line_prints_each_check_and_exits_with_the_verdict(tmp_path):
    def cli(problem, path):
        return subprocess.run([sys.executable, "-m", "workers.judge", problem, str(path)],
                              capture_output=True, text=True, cwd=REPO, timeout=180)
    good = cli("ring_allreduce", PROBLEMS["ring_allreduce"].dir / "reference.py")
    assert good.returncode == 0 and "PASS sum" in good.stdout and "PASS communication" in good.stdout
    (tmp_path / "wrong.py").write_text(wrong_solution("ring_allreduce/chunk_index"))
    bad = cli("ring_allreduce", tmp_path / "wrong.py")
    assert bad.returncode == 1 and "FAIL sum" in bad.stdout and "got" in bad.stdout and "expected" in bad.stdout
    (tmp_path / "bad.py").write_text("import socket\n")
    refused = cli("ring_allreduce", tmp_path / "bad.py")
    assert refused.returncode == 2 and refused.stdout.strip().splitlines()[-1].startswith("refused: ")


def test_without_a_sandbox_learner_code_is_refused_unless_the_operator_allows_it(tmp_path):
    """bubblewrap missing from PATH: refused (exit 2); PARALAB_ALLOW_UNSANDBOXED=1 runs it anyway."""
    env = {"PATH": str(tmp_path), "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    reference = PROBLEMS["ring_allreduce"].dir / "reference.py"
    command = [sys.executable, "-m", "workers.judge", "ring_allreduce", str(reference)]
    refused = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=180)
    assert refused.returncode == 2
    assert "no sandbox is available" in refused.stdout.strip().splitlines()[-1]
    allowed = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=180,
                             env={**env, "PARALAB_ALLOW_UNSANDBOXED": "1"})
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "PASS sum" in allowed.stdout
