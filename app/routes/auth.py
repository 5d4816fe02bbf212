"""Signing in and out, signing up with a class code, changing your password, and the admin's API:
users (create, reset a password, delete), classes, who runs what, cancelling, and the class's
per-problem results as CSV."""

from __future__ import annotations

import csv
import io
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field

from app.accounts import AccountError, User
from app.auth import auth_on, current_user, require_admin, sign_in
from app.messages import Refusal, say
from app.routes.submissions import cancel_or_409

router = APIRouter(tags=["accounts"])

UserDep = Annotated[User, Depends(current_user)]
AdminDep = Annotated[User, Depends(require_admin)]


class SignIn(BaseModel):
    name: str = Field(max_length=64)
    password: str = Field(max_length=256)


class SignUp(SignIn):
    code: str = Field(max_length=32, description="the class's sign-up code")


class UserCreate(SignIn):
    role: str = Field("student", pattern="^(admin|student)$")
    klass: str | None = Field(None, alias="class", max_length=64)


class PasswordChange(BaseModel):
    current: str = Field(max_length=256, description="the password you sign in with now")
    new: str = Field(max_length=256, description="the new one: at least 8 characters")


class PasswordReset(BaseModel):
    password: str = Field(max_length=256, description="the user's new password: at least 8 characters")


class ClassCreate(BaseModel):
    name: str = Field(max_length=64)


def _accounts(request: Request):
    return request.app.state.accounts


def _address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _refuse_if_blocked(request: Request, name: str) -> None:
    """429 with Retry-After once the sign-in rate limit holds this name or this client's address."""
    blocked = request.app.state.signin_limit.blocked(name, _address(request))
    if blocked:
        raise Refusal(429, blocked.said, headers={"Retry-After": str(blocked.retry_after_s)})


@router.post("/api/auth/login")
def login(body: SignIn, request: Request):
    """Sign in: a session cookie, or 401 for a wrong name or password (the same words for both);
    429 after too many wrong ones for this name or from this address (PARALAB_SIGNIN_*)."""
    if not auth_on(request.app.state.settings):
        raise Refusal(404, say("auth.accounts_off_no_sign_in", "accounts are off (PARALAB_AUTH=off): nobody needs to sign in"))
    _refuse_if_blocked(request, body.name)
    user = _accounts(request).authenticate(body.name, body.password)
    if user is None:
        request.app.state.signin_limit.failed(body.name, _address(request))
        raise Refusal(401, say("auth.wrong_password", "wrong name or password"))
    request.app.state.signin_limit.succeeded(body.name)
    sign_in(request, user)
    return user.public()


@router.post("/api/auth/logout")
def logout(request: Request):
    """Sign out: this session's cookie, and every copy of it, stops working (so do your other sessions)."""
    user = request.scope.get("paralab_user")
    if user is not None:
        _accounts(request).end_sessions(user.name)
    if "session" in request.scope:
        request.session.clear()
    return {"signed_out": True}


@router.post("/api/auth/signup", status_code=201)
def signup(body: SignUp, request: Request):
    """A student joins a class with its sign-up code, and is signed in."""
    if not auth_on(request.app.state.settings):
        raise Refusal(404, say("auth.accounts_off", "accounts are off (PARALAB_AUTH=off)"))
    try:
        user = _accounts(request).sign_up(body.code, body.name, body.password)
    except AccountError as exc:
        raise Refusal(422, exc.message)
    sign_in(request, user)
    return user.public()


@router.post("/api/auth/password")
def change_password(body: PasswordChange, request: Request, user: UserDep):
    """Change your own password: 403 when `current` is wrong (it counts against the sign-in limit),
    422 when `new` breaks the sign-up rules. Your other sessions end; this one goes on."""
    if not auth_on(request.app.state.settings):
        raise Refusal(404, say("auth.accounts_off", "accounts are off (PARALAB_AUTH=off)"))
    _refuse_if_blocked(request, user.name)
    if _accounts(request).authenticate(user.name, body.current) is None:
        request.app.state.signin_limit.failed(user.name, _address(request))
        raise Refusal(403, say("auth.wrong_current_password", "the current password is wrong"))
    try:
        epoch = _accounts(request).change_password(user.name, body.new)
    except AccountError as exc:
        raise Refusal(422, exc.message)
    request.session["epoch"] = epoch
    return user.public()


@router.get("/api/auth/me")
def me(request: Request):
    """The signed-in user, or 401. In the lecture mode, the local user (an admin)."""
    return {**current_user(request).public(), "auth": request.app.state.settings.AUTH}


# ---- admin --------------------------------------------------------------------------------------
@router.get("/api/admin/users")
def read_users(request: Request, admin: AdminDep):
    return _accounts(request).users()


@router.post("/api/admin/users", status_code=201)
def create_user(body: UserCreate, request: Request, admin: AdminDep):
    try:
        return _accounts(request).create_user(body.name, body.password, body.role, body.klass).public()
    except AccountError as exc:
        raise Refusal(422, exc.message)


def _existing_user(request: Request, name: str) -> User:
    user = _accounts(request).user(name)
    if user is None:
        raise Refusal(404, say("account.no_user", "no user '{name}'", name=name))
    return user


@router.post("/api/admin/users/{name}/password")
def reset_password(name: str, body: PasswordReset, request: Request, admin: AdminDep):
    """Give a user a new password (they forgot theirs): their sessions end, and the sign-in limit
    forgets their name's failures."""
    user = _existing_user(request, name)
    try:
        epoch = _accounts(request).change_password(name, body.password)
    except AccountError as exc:
        raise Refusal(422, exc.message)
    request.app.state.signin_limit.succeeded(name)
    if name == admin.name:
        request.session["epoch"] = epoch          # your own: this session goes on
    return user.public()


@router.delete("/api/admin/users/{name}")
async def delete_user(name: str, request: Request, admin: AdminDep):
    """Delete an account with its submissions and runs: its sessions end at once, what it has in
    flight is cancelled, and nothing of it is left for a new account of the same name. Not your own
    account (409)."""
    if name == admin.name:
        raise Refusal(409, say("account.delete_self", "you cannot delete your own account; another admin can"))
    _existing_user(request, name)
    accounts, judge, manager = _accounts(request), request.app.state.judge, request.app.state.manager
    in_flight = accounts.submissions(name, statuses=("queued", "judging"), limit=10_000)
    removed = accounts.delete_user(name)
    for submission in sorted(in_flight, key=lambda s: s["status"] != "queued"):  # waiting ones first: no wait
        await judge.cancel(submission["id"])
    runs = manager.delete_owned_by(name)
    return {"name": name, "deleted": True, "submissions": removed, "runs": runs}


@router.get("/api/admin/classes")
def read_classes(request: Request, admin: AdminDep):
    return _accounts(request).classes()


@router.post("/api/admin/classes", status_code=201)
def create_class(body: ClassCreate, request: Request, admin: AdminDep):
    """A class and its sign-up code, which students type on the sign-in page."""
    try:
        return _accounts(request).create_class(body.name)
    except AccountError as exc:
        raise Refusal(422, exc.message)


@router.get("/api/admin/activity")
async def activity(request: Request, admin: AdminDep):
    """Who runs what: every run and submission in flight, with its owner."""
    manager, judge = request.app.state.manager, request.app.state.judge
    runs = [{"id": r.id, "owner": r.owner, "lesson": r.lesson, "world_size": r.world_size,
             "status": r.status, "created_at": r.created_at}
            for r in manager.runs.values() if not r.final]
    submissions = [{**{k: s[k] for k in ("id", "user", "problem", "status", "created_at")},
                    "position": judge.position(s["id"])}
                   for s in _accounts(request).submissions(statuses=("queued", "judging"), limit=1000)]
    return {"runs": sorted(runs, key=lambda r: r["created_at"]),
            "submissions": sorted(submissions, key=lambda s: (s["position"] or 0, s["created_at"]))}


@router.post("/api/admin/submissions/{sid}/cancel")
async def cancel_submission(sid: str, request: Request, admin: AdminDep):
    """Cancel anyone's submission, waiting or being judged, as its owner's DELETE does."""
    if _accounts(request).submission(sid) is None:
        raise Refusal(404, say("lab.no_submission", "no submission '{id}'", id=sid))
    return await cancel_or_409(request, sid) | {"code": None}


@router.get("/api/admin/results.csv")
def results_csv(request: Request, admin: AdminDep):
    """Per student and problem (`?class=NAME` for one class): attempts, passed (0/1), when it first
    passed (UTC), the last verdict."""
    klass = request.query_params.get("class") or None
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["user", "class", "problem", "attempts", "passed", "first_passed_at", "last_status"])
    from datetime import datetime, timezone
    for row in _accounts(request).results(klass):
        when = row["first_passed_at"]
        writer.writerow([row["user"], row["class"] or "", row["problem"], row["attempts"], int(bool(row["passed"])),
                         datetime.fromtimestamp(when, timezone.utc).isoformat(timespec="seconds") if when else "",
                         row["last_status"]])
    return Response(out.getvalue(), media_type="text/csv",
                    headers={"content-disposition": f'attachment; filename="results{"-" + klass if klass else ""}.csv"'})
