"""The judge: `python -m workers.judge PROBLEM FILE` runs a learner's solution on real ranks in the
sandbox and prints each check. Exit status 0 when every check passes, 1 when one fails, 2 when the
code was refused or contained (the reason on the last line). The server judges with the same function.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from workers import sandbox
from workers.problems import ALLOWED_IMPORTS, PROBLEMS

MAX_CODE_BYTES = 64 * 1024


@dataclass
class Verdict:
    status: str                                  # "passed", "failed" or "refused"
    checks: list[dict] = field(default_factory=list)
    reason: str | None = None

    @property
    def exit_code(self) -> int:
        return {"passed": 0, "failed": 1}.get(self.status, 2)


def refuse(reason: str) -> Verdict:
    return Verdict("refused", reason=reason)


def screen(problem_id: str, code: str) -> str | None:
    """Why this submission must not run at all, or None."""
    if problem_id not in PROBLEMS:
        return f"unknown problem {problem_id!r}; problems: {', '.join(PROBLEMS)}"
    if len(code.encode()) > MAX_CODE_BYTES:
        return f"the submission is {len(code.encode())} bytes; the limit is {MAX_CODE_BYTES}"
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"the code does not parse: line {exc.lineno}: {exc.msg}"
    except (RecursionError, MemoryError):       # e.g. an expression nested thousands deep
        return "the code is nested too deeply to parse; write it flatter"
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if isinstance(node, ast.ImportFrom) and node.level:
            return f"line {node.lineno}: relative imports are not allowed"
        for name in names:
            if not any(name == a or name.startswith(a + ".") for a in ALLOWED_IMPORTS):
                return f"line {node.lineno}: importing {name!r} is not allowed; allowed: {', '.join(ALLOWED_IMPORTS)}"
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    missing = [f.name for f in PROBLEMS[problem_id].functions if f.name not in defined]
    if missing:
        return f"the code does not define {', '.join(missing)}"
    return None


def judge(problem_id: str, code: str, limits: sandbox.Limits = sandbox.Limits(),
          allow_unsandboxed: bool = False, stop: threading.Event | None = None) -> Verdict:
    """Judge one solution. Setting `stop` from another thread kills its processes at once (refused,
    "stopped: cancelled")."""
    reason = screen(problem_id, code)
    if reason:
        return refuse(reason)
    argv = [sys.executable, "-m", "workers.judge_runner", problem_id, "/job/submission.py"]
    if sandbox.available():
        outcome = sandbox.run(argv, {"submission.py": code.encode()}, limits, stop)
    elif allow_unsandboxed:
        outcome = _run_unsandboxed(problem_id, code, limits, stop)
    else:
        return refuse("no sandbox is available here (bubblewrap); the operator has not allowed unsandboxed code")
    if outcome.reason:
        return refuse(f"stopped: {outcome.reason}")
    return _verdict(outcome, limits)


def _run_unsandboxed(problem_id: str, code: str, limits: sandbox.Limits,
                     stop: threading.Event | None) -> sandbox.Outcome:
    with tempfile.TemporaryDirectory() as job:
        path = Path(job) / "submission.py"
        path.write_text(code)
        process = subprocess.Popen([sys.executable, "-m", "workers.judge_runner", problem_id, str(path)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   text=True, errors="replace", cwd=str(sandbox.REPO), start_new_session=True,
                                   env={**os.environ, "PYTHONPATH": str(sandbox.REPO)})
        stdout, stderr, reason = sandbox.supervise(process, limits.wall_s, stop)
    return sandbox.Outcome(process.returncode, stdout, stderr, reason)


def _verdict(outcome: sandbox.Outcome, limits: sandbox.Limits) -> Verdict:
    results = []
    for line in outcome.stdout.splitlines():
        try:
            results.append(json.loads(line))
        except ValueError:
            continue
    errors = [r for r in results if "error" in r or r.get("kind") == "error"]
    if errors:
        first = errors[0]
        limit = sandbox.exhausted(first.get("error") or first.get("message", ""), limits)
        if limit:
            return refuse(f"stopped: {limit}")
        rank = f"rank {first['rank']}: " if "rank" in first else ""
        return Verdict("failed", checks=_merge(results), reason=rank + (first.get("error") or first.get("message")))
    if not results:
        tail = outcome.stderr.strip().splitlines()[-1:] or ["no output"]
        return refuse(f"the judge produced no result ({tail[0]})")
    checks = _merge(results)
    return Verdict("passed" if all(c["passed"] for c in checks) else "failed", checks=checks)


def _merge(results: list[dict]) -> list[dict]:
    """One row per check: passed only if it passed on every rank; the failing ranks named."""
    merged: dict[str, dict] = {}
    for r in results:
        if r.get("kind") != "check":
            continue
        row = merged.setdefault(r["name"], {"name": r["name"], "passed": True, "detail": r.get("detail", ""),
                                            "failing_ranks": [], "first_failure": None})
        if not r["passed"]:
            row["passed"] = False
            row["failing_ranks"].append(r["rank"])
            row["first_failure"] = row["first_failure"] or r
    return list(merged.values())


def format_check(check: dict) -> str:
    if check["passed"]:
        return f"PASS {check['name']}"
    failure = check["first_failure"]
    text = f"FAIL {check['name']} on ranks {check['failing_ranks']}: {check['detail']}"
    if "max_abs_err" in failure:
        text += f"; max abs error {_number(failure['max_abs_err'])}"
    for d in failure.get("differences", [])[:3]:
        text += f"\n    at {d['index']}: got {_number(d['got'])}, expected {_number(d['expected'])}"
    if "expected" in failure:
        text += f"\n    expected: {'; '.join(failure['expected'])}\n    performed: {'; '.join(failure['performed']) or 'nothing'}"
    return text


def _number(value) -> str:
    return f"{value:.6g}" if isinstance(value, (int, float)) else str(value)   # "nan", "inf" arrive as text


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 2:
        print("usage: python -m workers.judge PROBLEM FILE", file=sys.stderr)
        return 2
    problem_id, path = args
    try:
        code = Path(path).read_text()
    except OSError as exc:
        print(f"refused: cannot read {path}: {exc.strerror}")
        return 2
    verdict = judge(problem_id, code, allow_unsandboxed=os.environ.get("PARALAB_ALLOW_UNSANDBOXED") == "1")
    for check in verdict.checks:
        print(format_check(check))
    failed = sum(not c["passed"] for c in verdict.checks)
    if verdict.status == "refused":
        print(f"refused: {verdict.reason}")
    elif verdict.reason:
        print(f"failed: {verdict.reason}")
    else:
        print(f"{len(verdict.checks) - failed} passed, {failed} failed")
    return verdict.exit_code


if __name__ == "__main__":
    sys.exit(main())
