"""Submissions: a solution to a practice problem, queued fairly and judged on real ranks in the
sandbox. Each user sees only their own (others' are 404); an admin sees all.

The routes are `async` on purpose: the queue lives on the event loop, so a quota check and the put
that follows it happen with no other request in between (30 at once must not slip past the quota)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, Field, field_validator
from pydantic_core import PydanticCustomError

from app.auth import current_user, may_see
from app.judged_runs import judged_run_id
from app.messages import Refusal, say
from app.submissions import TooMany
from workers.judge import MAX_CODE_BYTES
from workers.problems import PROBLEMS

router = APIRouter(prefix="/api/submissions", tags=["submissions"])


class SubmissionCreate(BaseModel):
    problem: str = Field(description="a problem id from GET /api/problems")
    code: str = Field(max_length=MAX_CODE_BYTES, description="the learner's Python file")

    @field_validator("code", mode="before")
    @classmethod
    def _not_too_long(cls, code):
        """Said in the submission's words before pydantic's own "String should have at most 65536 characters"."""
        if isinstance(code, str) and len(code) > MAX_CODE_BYTES:
            raise PydanticCustomError("lab.code_too_long", "the submission is {chars} characters long; a submission "
                                      "holds at most {max} (64 KiB)", {"chars": len(code), "max": MAX_CODE_BYTES})
        return code


def _public(request: Request, submission: dict, code: bool = False) -> dict:
    out = {k: v for k, v in submission.items() if k != "code" or code}
    out["position"] = request.app.state.judge.position(submission["id"]) if submission["status"] == "queued" else None
    run_id = judged_run_id(submission["id"])
    out["run"] = run_id if request.app.state.manager.store.has(run_id) else None   # the judged run, to step through
    return out


@router.post("", status_code=201)
async def create_submission(body: SubmissionCreate, request: Request):
    """Queue a solution: 201 with its id, status `queued` and its position (1 = judged next);
    429 when the user already has their quota waiting or being judged."""
    user = current_user(request)
    if body.problem not in PROBLEMS:
        unknown = say("lab.unknown_problem", "unknown problem '{problem}'; problems: {known}",
                      problem=body.problem, known=", ".join(PROBLEMS))
        raise HTTPException(422, detail=[{"loc": ["body", "problem"], "type": unknown.code, "msg": unknown.text,
                                          "params": unknown.params}])
    try:
        sid = request.app.state.judge.submit(user.name, body.problem, body.code)
    except TooMany as exc:
        raise Refusal(429, exc.args[0])
    return _public(request, request.app.state.accounts.submission(sid))


@router.get("")
async def read_submissions(request: Request, problem: str | None = None, limit: int = 50, all: bool = False):
    """Your submissions, newest first (`?problem=` to filter). An admin may ask for everyone's with `?all=1`."""
    user = current_user(request)
    owner = None if (all and user.admin) else user.name
    return [_public(request, s) for s in request.app.state.accounts.submissions(owner, problem, min(limit, 500))]


@router.get("/{sid}")
async def read_submission(sid: str, request: Request):
    """One submission with its code, status, position while queued, and each check once judged."""
    user = current_user(request)
    submission = request.app.state.accounts.submission(sid)
    if submission is None or not may_see(user, submission["user"]):
        raise Refusal(404, say("lab.no_submission", "no submission '{id}'", id=sid))
    return _public(request, submission, code=True)


@router.delete("/{sid}")
async def cancel_submission(sid: str, request: Request):
    """Cancel a submission: a waiting one leaves the queue; one being judged has its processes killed
    (gone when this answers). 409 once it has a verdict."""
    user = current_user(request)
    submission = request.app.state.accounts.submission(sid)
    if submission is None or not may_see(user, submission["user"]):
        raise Refusal(404, say("lab.no_submission", "no submission '{id}'", id=sid))
    return _public(request, await cancel_or_409(request, sid))


async def cancel_or_409(request: Request, sid: str) -> dict:
    """Cancel the submission `sid` (it exists) and return it; 409 when it has a verdict already."""
    accounts = request.app.state.accounts
    if not await request.app.state.judge.cancel(sid):
        status = accounts.submission(sid)["status"]
        raise Refusal(409, say("lab.submission_final", "submission {id} is {status} already; only one waiting or being judged can be cancelled", id=sid, status=status))
    return accounts.submission(sid)
