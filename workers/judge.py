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
from workers.judge_events import merged
from workers.judge_hang import hang_report
from workers.problems import ALLOWED_IMPORTS, PROBLEMS
from workers.problems.report import MAX_REPORT_BYTES
from workers.warm_checker import WarmChecker

MAX_CODE_BYTES = 64 * 1024
MAX_REASON_CHARS = 1000
CHECK_WALL_S = 60.0                # a check: one process's reference, compare (a first one waits for torch's import)
CHECKS_MAX_BYTES = 4 << 20         # what the checker prints: every check of every rank
# gloo, when a peer's process ended (during the rendezvous: "connectFullMesh failed")
PEER_GONE = ("Connection closed by peer", "Connection reset by peer", "connectFullMesh failed")
CHECKER = WarmChecker()            # this process's checker (started by the first judgment), shared by its threads


@dataclass
class Verdict:
    status: str                                  # "passed", "failed" or "refused"
    checks: list[dict] = field(default_factory=list)
    reason: str | None = None
    note: str | None = None                      # e.g. how much of a flood of output was dropped
    events: list[dict] = field(default_factory=list)   # what the ranks did, in time order: the run to step through

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
    sandboxed = sandbox.available()
    if not sandboxed and not allow_unsandboxed:
        return refuse("no sandbox is available here (bubblewrap); the operator has not allowed unsandboxed code")
    world = PROBLEMS[problem_id].world_size
    CHECKER.start()                    # the first judgment's: its imports overlap the ranks' run
    channels = Channels(world)
    argv = [sys.executable, "-m", "workers.judge_runner", problem_id, "/job/submission.py",
            *map(str, channels.write_ends)]
    if sandboxed:
        outcome = sandbox.run(argv, {"submission.py": code.encode()}, limits, stop, channels.write_ends)
    else:
        outcome = _run_unsandboxed(argv, code, limits, stop, channels.write_ends)
    control, reports = channels.collect()
    verdict = _verdict(problem_id, code, outcome, control, reports, channels.oversized(), limits, stop)
    verdict.note = outcome.output_note()
    verdict.events = merged([_events_of(text) for text in map(_text, reports)])
    return verdict


class Channels:
    """One pipe for the runner's account of how each rank ended, one per rank for its report: made
    here, outside the sandbox; each read as it comes, at most `MAX_REPORT_BYTES` kept (the rest is
    drained and counted, so no writer blocks)."""

    def __init__(self, world: int):
        pipes = [os.pipe() for _ in range(world + 1)]
        self.write_ends = tuple(w for _, w in pipes)
        self._readers = [_PipeReader(r) for r, _ in pipes]

    def collect(self, timeout_s: float = 5.0) -> tuple[bytes | None, list[bytes | None]]:
        """The control message and each rank's report (None where too large or still open)."""
        for reader in self._readers:
            reader.join(timeout_s)
        control, *reports = [r.data() for r in self._readers]
        return control, reports

    def oversized(self) -> list[int]:
        """The ranks whose report was over MAX_REPORT_BYTES."""
        return [rank for rank, reader in enumerate(self._readers[1:]) if reader.total > MAX_REPORT_BYTES]


class _PipeReader(threading.Thread):
    def __init__(self, fd: int):
        super().__init__(daemon=True)
        self.fd, self.total, self.chunks = fd, 0, []
        self.start()

    def run(self) -> None:
        with os.fdopen(self.fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(64 * 1024):
                self.total += len(chunk)
                if self.total <= MAX_REPORT_BYTES:
                    self.chunks.append(chunk)

    def data(self) -> bytes | None:
        return None if self.total > MAX_REPORT_BYTES or self.is_alive() else b"".join(self.chunks)


def _run_unsandboxed(argv: list[str], code: str, limits: sandbox.Limits, stop: threading.Event | None,
                     pass_fds: tuple[int, ...]) -> sandbox.Outcome:
    """For a trusted single-user machine only: the same runner, the same clean environment and
    rlimits, no namespaces (the reference solutions stay readable)."""
    with tempfile.TemporaryDirectory() as job:
        path = Path(job) / "submission.py"
        path.write_text(code)
        argv = [part if part != "/job/submission.py" else str(path) for part in argv]
        try:
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                       cwd=job, start_new_session=True, pass_fds=pass_fds,
                                       env=sandbox.clean_environment(PYTHONPATH=str(sandbox.REPO)))
        finally:
            for fd in pass_fds:
                os.close(fd)
        outcome = sandbox.supervise(process, limits, stop, watch_memory=True)
    if outcome.reason is None:
        outcome.reason = sandbox.signalled(outcome.returncode, limits)
    return outcome


def _verdict(problem_id: str, code: str, outcome: sandbox.Outcome, control: bytes | None, reports: list[bytes | None],
             oversized: list[int], limits: sandbox.Limits, stop: threading.Event | None) -> Verdict:
    """Trust nothing the sandbox printed: how the ranks ended comes from the runner's control pipe,
    what they computed from their own pipes, and every check from the checker outside."""
    if outcome.reason:
        return refuse(f"stopped: {outcome.reason}")
    try:
        ended = json.loads(control)
        exits, hung = {int(r): int(c) for r, c in ended["exits"].items()}, list(ended["hung"])
    except (TypeError, ValueError, KeyError, AttributeError):
        tail = outcome.stderr.strip().splitlines()[-1:] or [outcome.output_note() or "no output"]
        return refuse(f"the judge produced no result ({tail[0][:300]})")
    limit = next(filter(None, (sandbox.signalled(status, limits) for status in exits.values())), None)
    if limit:
        return refuse(f"stopped: {limit}")
    texts = [_text(report) for report in reports]
    checked = _check(problem_id, texts, ended.get("wire_bytes"), stop)
    if isinstance(checked, Verdict):
        return checked
    checks = _merge(checked["checks"])
    invalid = {int(rank): why for rank, why in checked["invalid"].items()}
    invalid |= {rank: f"rank {rank}'s report was refused: it is over {MAX_REPORT_BYTES} bytes" for rank in oversized}
    reason = _first_problem(texts, hung, ended, invalid, limits, code)
    if isinstance(reason, Verdict):
        return reason
    passed = not reason and checks and all(c["passed"] for c in checks)
    return Verdict("passed" if passed else "failed", checks=checks, reason=reason)


def _text(report: bytes | None) -> str | None:
    try:
        return report.decode() if report else None
    except UnicodeDecodeError:
        return "not UTF-8"           # refused by the checker as not JSON


def _first_problem(texts: list[str | None], hung: list[int], ended: dict, invalid: dict[int, str],
                   limits: sandbox.Limits, code: str) -> str | Verdict | None:
    """Why the ranks' run itself failed, before any check: a deadlock (with the hang report), a
    learner's exception, a rank that never reported, a report that was refused. Ranks left waiting for
    one that raised or ended without a word (an `os._exit` while loading) are not the deadlock: that rank is."""
    errors = [(rank, error) for rank, error in enumerate(map(_error_of, texts)) if error]
    for rank, error in errors:
        limit = sandbox.exhausted(error, limits)
        if limit:
            return refuse(f"stopped: {limit}")
    # a rank that raised, or ended, closes its connections: its peers then raise "connection closed",
    # which is an echo of that rank's end, not the cause
    echoes = [found for found in errors if any(echo in found[1] for echo in PEER_GONE)]
    causes = [found for found in errors if found not in echoes]
    ended_silently = [rank for rank, text in enumerate(texts) if not text and rank not in hung]
    if hung and not causes and not ended_silently:
        return hang_report(texts, code, ended)
    for rank, error in causes[:1]:
        return _raised(rank, error)
    for rank, text in enumerate(texts):
        if rank in invalid:
            return invalid[rank]
        if not text:
            return f"rank {rank} ended without reporting (killed?)"
    for rank, error in echoes[:1]:
        return _raised(rank, error)
    return None


def _raised(rank: int, error: str) -> str:
    return error if error.startswith("your code raised while loading") else f"rank {rank}: {error}"


def _events_of(text: str | None) -> list | None:
    try:
        events = json.loads(text).get("events") if text else None
    except (ValueError, AttributeError, RecursionError):
        return None
    return events if isinstance(events, list) else None


def _error_of(text: str | None) -> str | None:
    try:
        error = json.loads(text).get("error") if text else None
    except (ValueError, AttributeError, RecursionError):
        return None
    return error[:MAX_REASON_CHARS] if isinstance(error, str) else None


def _check(problem_id: str, texts: list[str | None], wire_bytes, stop: threading.Event | None) -> dict | Verdict:
    """Hand the reports and the traffic the runner measured to a checker forked by the warm one and
    wait for its checks (as long as the stop event allows)."""
    wire_bytes = wire_bytes if isinstance(wire_bytes, int) and wire_bytes >= 0 else None
    reports = json.dumps({"reports": texts, "wire_bytes": wire_bytes}).encode()
    try:
        outcome = CHECKER.check(problem_id).run(reports, CHECK_WALL_S, stop, CHECKS_MAX_BYTES)
    except RuntimeError as exc:
        return refuse(f"the judge's checker failed ({exc})")
    if outcome.reason == sandbox.CANCELLED:
        return refuse(f"stopped: {outcome.reason}")
    try:
        checked = json.loads(outcome.stdout)
        assert isinstance(checked["checks"], list) and isinstance(checked["invalid"], dict)
        return checked
    except (ValueError, KeyError, TypeError, AssertionError):
        last = (outcome.stderr.strip().splitlines() or [outcome.reason or "no output"])[-1]
        return refuse(f"the judge's checker failed ({last[:300]})")


def _merge(results: list[dict]) -> list[dict]:
    """One row per check: passed only if it passed on every rank; the failing ranks named; `compared`
    false for a check that could not be made (the traffic of ranks that hung): neither pass nor fail."""
    merged: dict[str, dict] = {}
    for r in results:
        if r.get("kind") != "check":
            continue
        row = merged.setdefault(r["name"], {"name": r["name"], "passed": True, "detail": r.get("detail", ""),
                                            "failing_ranks": [], "first_failure": None, "compared": True})
        if r.get("compared") is False:
            row["compared"] = False
        if not r["passed"]:
            row["passed"] = False
            row["failing_ranks"].append(r["rank"])
            row["first_failure"] = row["first_failure"] or r
    return list(merged.values())


def format_check(check: dict) -> str:
    if check.get("compared") is False:
        return f"NOT COMPARED {check['name']}: {check['detail']}"
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
    if verdict.note:
        print(f"note: {verdict.note}")
    if verdict.status == "refused":
        print(f"refused: {verdict.reason}")
    elif verdict.reason:
        print(f"failed: {verdict.reason}")
    else:
        print(f"{len(verdict.checks) - failed} passed, {failed} failed")
    return verdict.exit_code


if __name__ == "__main__":
    sys.exit(main())
