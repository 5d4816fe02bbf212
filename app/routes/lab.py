"""The hosted lab's pages: sign in, the practice problems, one problem with its editor, the admin page.
They work in the lecture mode too (no sign-in; the local user is an admin)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.auth import auth_on, current_user
from app.messages import Refusal, say
from workers.lessons import LESSONS
from workers.problems import PROBLEMS

router = APIRouter(tags=["pages"], include_in_schema=False)


def _page(request: Request, template: str, context: dict | None = None, status_code: int = 200):
    settings = request.app.state.settings
    user = request.scope.get("paralab_user") if auth_on(settings) else None
    return request.app.state.templates.TemplateResponse(
        request, template, {"user": user, "auth": auth_on(settings), **(context or {})}, status_code=status_code)


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request):
    return _page(request, "login.html")


@router.get("/problems", response_class=HTMLResponse)
def problems_page(request: Request):
    """Each problem with how this learner stands on it (solved, tried, not tried) and its lesson."""
    mine = request.app.state.accounts.submissions(user=current_user(request).name, limit=10_000)
    standing = {problem: "tried" for problem in {s["problem"] for s in mine}}
    standing |= {s["problem"]: "solved" for s in mine if s["status"] == "passed"}
    titles = {p.id: {lang: texts["title"] for lang, texts in p.texts().items() if texts.get("title")}
              for p in PROBLEMS.values()}
    return _page(request, "problems.html", {"problems": list(PROBLEMS.values()), "standing": standing,
                                            "lessons": LESSONS, "titles": titles})


@router.get("/problems/{problem_id}", response_class=HTMLResponse)
def problem_page(request: Request, problem_id: str):
    problem = PROBLEMS.get(problem_id)
    if problem is None:
        raise Refusal(404, say("lab.no_problem", "no problem '{problem}'", problem=problem_id))
    return _page(request, "problem.html", {"problem": problem, "lessons": LESSONS})


@router.get("/admin", response_class=HTMLResponse)
def admin_page(request: Request):
    if not current_user(request).admin:
        raise Refusal(403, say("auth.admin_only_page", "only an admin may see this page"))
    return _page(request, "admin.html")
