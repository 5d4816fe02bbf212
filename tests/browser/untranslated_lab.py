"""The hosted lab's pages in Chinese: the audit of tests/browser/untranslated.py, on a server with accounts
on (PARALAB_AUTH=on). A student joins with a wrong class code, signs in with a wrong password, meets the
sign-in limit, signs in, opens the problems and the index, changes their password with a wrong current
one, is refused a lesson run with too many ranks, then on a problem page waits in the judge's queue,
cancels, is refused, fails and passes. The admin sees runs and submissions in flight, creates a class
(twice) and a user, resets a password and deletes the user (the dialogs' questions too). Last, every
hosted-lab message of the server that the pages do not meet goes through `tMessage` (the coded ones by their
code; every code's Chinese is checked in tests/app/test_messages.py).

`audit_lab(student_page, admin_page, base_url)` returns {place: [Finding]}; the server must be started
with `LAB_ENV`.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests import web
from tests.browser.sign_in import submit_sign_in
from tests.browser.untranslated import Finding, english_words, own_words, switch_to_chinese, untranslated
from tests.problems.wrong import wrong_solution
from workers.judge import ALLOWED_IMPORTS

REPO = Path(__file__).resolve().parents[2]
ADMIN_PASSWORD = "admin-secret-1"
LAB_ENV = {"PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": ADMIN_PASSWORD, "PARALAB_SECRET_KEY": "zh-audit-key",
           "PARALAB_JUDGE_CONCURRENCY": "1",          # one submission judged at a time: the next one waits
           "PARALAB_SIGNIN_MAX_FAILURES": "2"}         # the sign-in limit after two wrong passwords
PROBLEM = "ring_allreduce"
NAMES = ("ada", "mallory", "bea", "cs101", "cs102", *ALLOWED_IMPORTS)   # users and classes; modules a refusal lists
FOREVER = "import torch\n\n\ndef ring_all_reduce(x, rank, world):\n    while True:\n        pass\n"


def admin_client(base_url: str) -> httpx.Client:
    """The admin, signed in over the API, with a class cs101 and its student ada."""
    admin = httpx.Client(base_url=base_url, timeout=30)
    assert admin.post("/api/auth/login", json={"name": "admin", "password": ADMIN_PASSWORD}).status_code == 200
    admin.post("/api/admin/classes", json={"name": "cs101"})
    admin.post("/api/admin/users", json={"name": "ada", "password": "ada-pass-1", "class": "cs101"})
    return admin


def wait_state(page, state: str, timeout: float = 90_000) -> None:
    page.locator(f'.verdict-status[data-state="{state}"]').wait_for(timeout=timeout)


def judge_forever(admin: httpx.Client) -> str:
    """The admin's submission that never ends, being judged (the judge's one slot taken); its id."""
    sid = admin.post("/api/submissions", json={"problem": PROBLEM, "code": FOREVER}).json()["id"]
    deadline = time.monotonic() + 60
    while admin.get(f"/api/submissions/{sid}").json()["status"] != "judging":
        assert time.monotonic() < deadline, "the judge never took the admin's submission"
        time.sleep(0.1)
    return sid


# ---- the student ----------------------------------------------------------------------------------------
def audit_sign_in(page, base_url: str, look) -> None:
    """The sign-in page: a wrong class code, a wrong password, the sign-in limit; then signed in as ada."""
    page.goto(f"{base_url}/problems")
    page.wait_for_url("**/login?next=*")
    switch_to_chinese(page)
    look("sign-in page")
    page.fill("#sign-up input[name=code]", "ABCD-1234-EF56")
    page.fill("#sign-up input[name=name]", "bea")
    page.fill("#sign-up input[name=password]", "bea-pass-1")
    page.click("#sign-up button[type=submit]")
    page.wait_for_selector("#sign-up .lab-error:not([hidden])")
    look("join: a wrong class code")
    submit_sign_in(page, "ada", "not-her-password")
    page.wait_for_selector("#sign-in .lab-error:not([hidden])")
    look("sign-in: a wrong password")
    for _ in range(2):
        web.post(f"{base_url}/api/auth/login", json={"name": "mallory", "password": "guess"})
    submit_sign_in(page, "mallory", "guess")
    page.wait_for_function("document.querySelector('#sign-in .lab-error').textContent.includes('mallory')")
    look("sign-in: the limit (429)")
    submit_sign_in(page, "ada", "ada-pass-1")
    page.wait_for_url("**/problems")


def audit_problems_and_menu(page, base_url: str, look) -> None:
    """The problem list, the index page, and the password menu refusing a wrong current password."""
    look("problems list")
    page.goto(base_url + "/")
    look("index page, signed in")
    page.goto(base_url + "/problems")
    page.locator(".lab-user").click()
    form = page.locator("#change-password")
    form.locator("input[name=current]").fill("not-my-password")
    form.locator("input[name=new]").fill("ada-pass-2")
    form.locator("button[type=submit]").click()
    form.locator(".lab-error:not([hidden])").wait_for()
    look("change password: a wrong current one")
    page.locator(".lab-user").click()


def submit(page, code: str) -> None:
    page.locator(".editor-input").fill(code)
    page.click('[data-action="submit"]')


def audit_problem_page(page, base_url: str, admin: httpx.Client, look) -> None:
    """Waiting in the queue behind the admin's endless submission, cancelled; refused; wrong; right."""
    page.goto(f"{base_url}/problems/{PROBLEM}")
    page.wait_for_selector(".statement[lang=zh]")                   # ring_allreduce has its Chinese statement
    look("problem page")
    forever = judge_forever(admin)
    submit(page, wrong_solution(f"{PROBLEM}/chunk_index"))
    wait_state(page, "queued")
    look("problem: a submission waiting in the queue")
    page.click('[data-action="cancel"]')
    wait_state(page, "cancelled")
    look("problem: cancelled while it waited")
    admin.delete(f"/api/submissions/{forever}")
    submit(page, "import os\n" + wrong_solution(f"{PROBLEM}/chunk_index"))
    wait_state(page, "refused")
    look("problem: refused (a forbidden import)")
    submit(page, wrong_solution(f"{PROBLEM}/chunk_index"))
    wait_state(page, "failed")
    look("problem: a wrong solution judged")
    submit(page, (REPO / f"workers/problems/{PROBLEM}/reference.py").read_text())
    wait_state(page, "passed")
    look("problem: the right solution judged")


def audit_student_ranks(page, base_url: str, look) -> None:
    """A student's form offers no more ranks than they may start (4); a run asked with more all the same (a
    page older than the limit, say) gets the 422 beside the world size."""
    page.goto(f"{base_url}/lessons/tp_mlp")
    switch_to_chinese(page)
    page.wait_for_selector(".run-button:not([disabled])")
    assert max(page.eval_on_selector_all('input[name="world_size"]', "els => els.map((e) => Number(e.value))")) == 4
    page.evaluate("""() => Object.assign(document.querySelector('input[name="world_size"][value="4"]'),
                                        { value: "8", checked: true })""")
    page.locator(".run-button").click()
    page.wait_for_selector(".field-error:not([hidden])")
    look("lesson: a student's run with too many ranks")


# ---- the admin -------------------------------------------------------------------------------------------
def answer_dialog(page, report: dict, place: str, answer: str | None = None) -> None:
    """Answer the next prompt or confirm, and report its question if it is in English."""
    def on_dialog(dialog) -> None:
        words = english_words(dialog.message, own_words(list(NAMES)))
        report[place] = [Finding(dialog.message, f"{dialog.type} dialog", words)] if words else []
        dialog.accept(answer) if answer is not None else dialog.accept()
    page.once("dialog", on_dialog)


def create(page, form_id: str, **fields: str) -> None:
    form = page.locator(f"#{form_id}")
    for name, value in fields.items():
        if name == "role":
            form.locator("select[name=role]").select_option(value)
        else:
            form.locator(f"[name={name}]").fill(value)
    form.locator("button[type=submit]").click()


def audit_admin(page, base_url: str, admin: httpx.Client, look, report: dict) -> None:
    """The admin page with a run and a submission in flight; a class created twice; a user created, their
    password reset and the user deleted; then everything cancelled from the page."""
    admin.post("/api/runs", json={"lesson": "deadlock", "world_size": 2, "params": {"timeout_s": 60}})
    judge_forever(admin)
    page.goto(f"{base_url}/admin")
    page.wait_for_url("**/login?next=*")
    switch_to_chinese(page)
    submit_sign_in(page, "admin", ADMIN_PASSWORD)
    page.wait_for_url("**/admin")
    page.wait_for_selector("#runs tr[data-run]")
    page.wait_for_selector("#submissions tr[data-submission]")
    look("admin: work in flight")
    assert page.locator('#users tr[data-user="admin"] td').first.inner_text() == "admin"   # a name, not 管理员
    create(page, "new-class", name="cs102")
    page.wait_for_selector("#classes td:text-is('cs102')")
    create(page, "new-class", name="cs102")
    page.wait_for_selector("#new-class .lab-error:not([hidden])")
    look("admin: a class that exists")
    create(page, "new-user", name="bea", password="bea-pass-1", role="student", **{"class": "cs102"})
    page.wait_for_selector('#users tr[data-user="bea"]')
    look("admin: a user created")
    answer_dialog(page, report, "admin: the reset-password question", "bea-pass-2")
    page.locator('#users tr[data-user="bea"] [data-action="reset-password"]').click()
    page.wait_for_function("document.querySelector('#admin-status').textContent.includes('bea')")
    look("admin: a password reset")
    answer_dialog(page, report, "admin: the delete question")
    page.locator('#users tr[data-user="bea"] [data-action="delete-user"]').click()
    page.locator('#users tr[data-user="bea"]').wait_for(state="detached")
    look("admin: a user deleted")
    for table in ("runs", "submissions"):
        page.locator(f"#{table} tr[data-{table[:-1]}] button").first.click()
    # a stopped judgment answers once its sandbox's cgroup is empty (docs/judge.md): on a busy machine, seconds
    page.wait_for_selector("#runs td[colspan]", timeout=60_000)
    page.wait_for_selector("#submissions td[colspan]", timeout=60_000)
    look("admin: nothing in flight")


# ---- the server's words the pages did not meet --------------------------------------------------------------
TSERVER_JS = """async (messages) => {
  const { tMessage } = await import("paralab/i18n.js");
  return messages.map((m) => tMessage(m));
}"""


def server_messages() -> list:
    """The hosted lab's refusals ({detail, code, params}, made by the server's own code) and the judge's reasons
    (sentences with no code yet)."""
    from starlette.datastructures import Headers

    from app.csrf import cross_site_refusal
    from app.signin_limit import SignInLimit
    from app.submissions import CANCELLED_JUDGING, CANCELLED_WAITING
    from workers import sandbox
    from workers.judge import screen

    limit = SignInLimit(per_name=1, per_address=1, window_s=300)
    limit.failed("bob", "10.0.0.1")
    limits = sandbox.Limits()
    starter = (REPO / f"workers/problems/{PROBLEM}/starter.py").read_text()
    return [
        limit.blocked("bob", "10.0.0.2").said.body(), limit.blocked("carol", "10.0.0.1").said.body(),
        cross_site_refusal(Headers({"cookie": "session=x", "origin": "https://people.uni.edu", "host": "lab.uni.edu"}), "session").body(),
        screen(PROBLEM, "from . import x\n" + starter), screen(PROBLEM, "import torch\n"), screen("nope", starter),
        screen(PROBLEM, starter + "#" * 100_000),
        *(f"stopped: {sandbox.exhausted(error, limits)}" for error in ("MemoryError", "BlockingIOError", "File too large")),
        "stopped: wall-clock limit (20 s)", "stopped: CPU-time limit (30 s)", "stopped: cancelled",
        "no sandbox is available here (bubblewrap); the operator has not allowed unsandboxed code",
        "the judge produced no result (no output)",
        "your code raised while loading: NameError: name 'q' is not defined (your line 3: q)",
        "the ranks did not finish within 30 s — are they waiting for each other (a deadlock: a call some rank never makes)?",
        "rank 2 ended without reporting (killed?)", "rank 1: ZeroDivisionError: division by zero (your line 7: 1 / 0)",
        CANCELLED_WAITING, CANCELLED_JUDGING, "the server restarted before it was judged; submit again",
        "the judge failed: [Errno 2] No such file or directory: 'bwrap'",
        {"msg": "String should have at most 64 characters", "type": "string_too_long", "params": {"max_length": 64}},
        {"msg": "String should have at least 1 character", "type": "string_too_short", "params": {"min_length": 1}},
    ]


# What Python says inside a reason (a learner's exception, an OS error): kept as it is, like a traceback.
PYTHON_SAYS = ["NameError: name 'q' is not defined", "ZeroDivisionError: division by zero",
               "[Errno 2] No such file or directory"]


def audit_server_messages(page, report: dict) -> None:
    """Each message in Chinese (`tMessage` on the page, in 中文), with no English word left but names and
    Python's own words."""
    messages = server_messages()
    own = own_words([*NAMES, *PYTHON_SAYS])
    report["the server's hosted-lab messages"] = [
        Finding(said, f"tMessage({message!r})", words)
        for message, said in zip(messages, page.evaluate(TSERVER_JS, messages))
        if (words := english_words(said, own))]


# ---- the whole pass ---------------------------------------------------------------------------------------
def audit_lab(student, admin_page, base_url: str) -> dict[str, list[Finding]]:
    """Every place of the hosted lab the audit looks at → what is English there. `student` and `admin_page`:
    pages in two browser contexts of their own (two sessions)."""
    report: dict[str, list[Finding]] = {}

    def look(place: str, page=None) -> None:
        report[place] = untranslated(page or student, base_url, NAMES)

    admin = admin_client(base_url)
    try:
        audit_sign_in(student, base_url, look)
        audit_problems_and_menu(student, base_url, look)
        audit_student_ranks(student, base_url, look)
        audit_problem_page(student, base_url, admin, look)        # the student's page ends on the passed verdict
        audit_admin(admin_page, base_url, admin, lambda place: look(place, admin_page), report)
        audit_server_messages(admin_page, report)
    finally:
        admin.close()
    return report


def audit_lab_in(browser, base_url: str) -> dict[str, list[Finding]]:
    """`audit_lab` with two fresh browser contexts (the audit script's way)."""
    contexts = [browser.new_context(viewport={"width": 1400, "height": 900}) for _ in range(2)]
    try:
        for context in contexts:
            context.set_default_timeout(30_000)
        return audit_lab(*(context.new_page() for context in contexts), base_url)
    finally:
        for context in contexts:
            context.close()
