"""Practice problems: list them, read one, judge a solution on real ranks in the sandbox."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from workers.judge import MAX_CODE_BYTES, judge
from workers.problems import PROBLEMS
from app.messages import Refusal, say

router = APIRouter(prefix="/api/problems", tags=["problems"])


class Submission(BaseModel):
    code: str = Field(max_length=MAX_CODE_BYTES, description="the learner's Python file")


def _problem(problem_id: str):
    problem = PROBLEMS.get(problem_id)
    if problem is None:
        raise Refusal(404, say("lab.no_problem_known", "no problem '{problem}'; problems: {known}", problem=problem_id, known=", ".join(PROBLEMS)))
    return problem


@router.get("")
def read_problems():
    """Each problem: id, title, world size and the functions the learner writes, with signatures."""
    return [problem.public() for problem in PROBLEMS.values()]


@router.get("/{problem_id}")
def read_problem(problem_id: str):
    """One problem with its statement (Markdown; `statements` in every language it has, `texts` its
    other words per language) and the starter code the editor opens with."""
    problem = _problem(problem_id)
    return {**problem.public(), "statement": problem.text("statement.en.md"), "statements": problem.statements(),
            "texts": problem.texts(), "starter": problem.text("starter.py")}


@router.post("/{problem_id}/judge")
async def judge_solution(problem_id: str, body: Submission, request: Request):
    """Run the solution on real ranks in the sandbox: each check, or why it was refused."""
    _problem(problem_id)
    settings = request.app.state.settings
    async with request.app.state.judge_slots:
        verdict = await asyncio.to_thread(judge, problem_id, body.code,
                                          allow_unsandboxed=settings.ALLOW_UNSANDBOXED)
    return {"status": verdict.status, "checks": verdict.checks, "reason": verdict.reason, "note": verdict.note}
