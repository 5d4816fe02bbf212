"""Finding interface text left in English on a page shown in Chinese.

`untranslated(page)` reads every rendered text node and every aria-label, title, placeholder and alt
of the page, drops what is no one's words to translate (the lesson's code, its parameter names and choices,
the sites, tracebacks and exception texts its events carry, what a rank printed), then numbers, identifiers (`all_reduce`, `W1`, `program.py:12`), names the server quotes ('ada') and the
words Chinese technical text keeps as they are (rank, all-reduce, GPU …). The lesson's own words — its
title, summary, parameter help, and the labels, check, tensor and metric names its events carry — are
translated by its texts.zh.json, so they count. Text marked as not the
interface's — `translate="no"` (a user's or a class's name) or `lang="en"` (a problem's statement) — is
left out too. What still holds a Latin word is English a reader of the Chinese interface would see.

Run as a script, it is the audit: every lesson at a small world size, scrubbed to a few places, a hang,
a crash, step mode, refused parameters and a lecture room, each finding printed once with where it was:

    python -m tests.browser.untranslated            # both passes
    python -m tests.browser.untranslated lab        # only the hosted lab's pages

and then the hosted lab's pages (tests/browser/untranslated_lab.py) on a server with accounts on.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass


# Text nodes and labels as the page draws them: [{text, where}], only what is rendered (a `hidden` panel,
# a closed dialog and an empty tooltip are not; a visually hidden table for screen readers is).
COLLECT_JS = """() => {
  const SKIP = "code, pre, script, style, textarea, .prose, .source-code, [translate='no']";
  const ATTRS = ["aria-label", "title", "placeholder", "alt"];
  const shown = (el) => !el.closest(SKIP) && (!el.closest("[lang]") || el.closest("[lang]").lang.startsWith("zh"))
    && (el.checkVisibility ? el.checkVisibility() : true) && !el.closest("[hidden]");
  const where = (el) => {
    const parts = [];
    for (let e = el; e && e !== document.body && parts.length < 3; e = e.parentElement) {
      parts.unshift(e.id ? `#${e.id}` : e.tagName.toLowerCase() + (e.classList[0] ? `.${e.classList[0]}` : ""));
      if (e.id) break;
    }
    return parts.join(" > ");
  };
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let node = walker.currentNode; node; node = walker.nextNode()) {
    if (node.nodeType === Node.TEXT_NODE) {
      const el = node.parentElement;
      const visible = el && (el.tagName === "OPTION" ? shown(el.closest("select") || el) : shown(el));
      if (visible && node.data.trim()) found.push({ text: node.data.trim(), where: where(el) });
    } else if (node !== document.body) {
      for (const name of ATTRS) {
        const value = node.getAttribute(name);
        if (value && value.trim() && shown(node)) found.push({ text: value.trim(), where: `${where(node)} [${name}]` });
      }
    }
  }
  return found;
}"""

# The strings of the run's events that are nobody's words to translate: where code is (sites), what Python
# and torch said (a rank's exception, a traceback), what a rank printed, and names of ops, groups, dtypes.
LESSON_STRINGS_JS = """() => {
  const KEPT = ["site", "traceback", "error", "output", "message", "op", "group", "dtype", "reduce_op", "schedule"];
  const out = new Set();
  const walk = (value, key) => {
    if (typeof value === "string") { if (KEPT.includes(key)) out.add(value); }
    else if (Array.isArray(value)) value.forEach((v) => walk(v, key));
    else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) walk(v, k);
  };
  for (const e of (window.paralab?.store?.state.log || [])) {
    if (e.kind === "run") {
      if (e.error) for (const key of ["site", "traceback", "ranks"]) walk(e.error[key], "site");
      if (e.error?.params?.exception) out.add(e.error.params.exception);    // Python's words: "ZeroDivisionError: …"
    } else if (e.kind !== "log") walk(e, "");
    else walk(e.output, "output");
  }
  return [...out];
}"""

# Words Chinese technical text keeps as they are (the seeds and the lessons' explain.zh.md keep rank,
# stage, microbatch, all-reduce, send/recv …), and names: of keys, file formats, products, values.
KEPT_WORDS = {
    "rank", "stage", "softmax", "microbatch", "step", "root", "tag", "token", "seq", "paralab",
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "reduce", "scatter", "gather",
    "barrier", "send", "recv", "isend", "irecv", "AR", "AG", "RS", "BC",
    "tp", "pp", "dp", "sp", "TP", "PP", "DP", "SP", "ZeRO", "GPipe", "FSDP", "Megatron", "PyTorch", "torch",
    "GPU", "GPUs", "CPU", "NCCL", "nccl", "gloo", "nccl-tests", "algbw", "busbw", "GQA", "KV", "FFN", "MLP",
    "LayerNorm", "Adam", "SGD", "JSON", "CSV", "Python", "bubblewrap", "Origin", "Referer",
    "PNG", "SVG", "HTML", "QR", "Home", "End", "Space", "Esc", "Enter", "Ctrl",
    "B", "KiB", "MiB", "GiB", "s", "ms", "µs", "ns", "inf", "nan", "true", "false", "null",
    # the lessons' symbols and terms, as their Chinese explanations keep them
    "GELU", "autograd", "dropout", "softmax", "Ulysses", "sbh", "sbf", "log", "Wq", "Wk", "Wv", "Wo",
    "dX", "dY", "dK", "dQ", "dV", "dW", "dw", "loss", "cf", "max", "min", "zig-zag", "top-k",
    # torch's own names, as the DTensor and FSDP2 lessons keep them
    "DTensor", "Shard", "Replicate", "Partial", "redistribute", "device", "mesh", "ColwiseParallel",
    "RowwiseParallel", "SequenceParallel", "torchrun",
    "Ray",     # the cluster a run's ranks may be placed on (docs/cluster.md)
}
# Names kept whole: the protocol's mismatch classes (the Chinese explanation names them so too).
KEPT_PHRASES = ["world size", "world_size", "flight recorder", "Flight recorder", "missing ranks", "op mismatch",
                "size mismatch", "unmatched send/recv", "torch.distributed"]
ROOM_CODE = re.compile(r"\b[A-Z2-9]{4}-?[A-Z2-9]{4}\b")
QUOTED_NAME = re.compile(r"'[^'\s]+'")                                      # a name as the server quotes it: 'ada'
IDENTIFIER = re.compile(r"[\w.:/=-]*(?:[_/]|\.[a-z]{1,4}\b|\d)[\w.:/=-]*")   # all_reduce, W1, p2p, program.py:12, AUTH=off
WORD = re.compile(r"[A-Za-z][A-Za-z'’]*(?:-[A-Za-z]+)*")


@dataclass(frozen=True)
class Finding:
    text: str
    where: str
    words: tuple[str, ...]


def api_json(page, url: str):
    """GET `url` as the page's user (its cookies: the hosted lab answers strangers 401), or None."""
    response = page.request.get(url)
    return response.json() if response.ok else None


def lesson_strings(page, base_url: str) -> list[str]:
    """Words on the page that are nobody's to translate: every lesson's id, this lesson's parameter names and
    choices, and the events' sites, exceptions, printed output and names of ops and groups."""
    lesson_id = page.evaluate("document.querySelector('[data-lesson]')?.dataset.lesson")
    strings = set(page.evaluate(LESSON_STRINGS_JS))
    for lesson in api_json(page, f"{base_url}/api/lessons") or []:
        strings.add(lesson["id"])
    if lesson_id:
        lesson = api_json(page, f"{base_url}/api/lessons/{lesson_id}")
        schema = lesson["params"]
        for name, prop in schema.get("properties", {}).items():
            resolved = schema.get("$defs", {}).get(prop.get("$ref", "").split("/")[-1], {}) | prop
            strings |= {name, *(str(v) for v in resolved.get("enum", []))}
    return sorted((s for s in strings if s.strip()), key=len, reverse=True)


def own_words(strings: list[str]) -> re.Pattern:
    """One pattern for all of `strings` (longest first), each matched as a whole, not inside a word (nor inside
    "all-reduce", where a choice "reduce" would leave "all")."""
    alternatives = "|".join(re.escape(s) for s in strings if len(s) > 1) or "(?!)"
    return re.compile(rf"(?<![A-Za-z-])(?:{alternatives})(?![A-Za-z-])")


def english_words(text: str, own: re.Pattern) -> tuple[str, ...]:
    """The Latin words of `text` left once the lesson's strings, kept phrases and identifiers are out."""
    for phrase in KEPT_PHRASES:              # first: a lesson's own word may be part of one (torch.distributed)
        text = text.replace(phrase, " ")
    text = own.sub(" ", text)
    text = ROOM_CODE.sub(" ", IDENTIFIER.sub(" ", QUOTED_NAME.sub(" ", text)))
    return tuple(w for w in WORD.findall(text) if len(w) > 1 and w not in KEPT_WORDS)


def untranslated(page, base_url: str, names: tuple[str, ...] = ()) -> list[Finding]:
    """Interface text on `page` (shown in Chinese) that is still English. `names`: of users and classes,
    which the page may write inside a sentence ("ada 已删除。")."""
    # what the page draws when idle (the screen readers' tables, panels off screen) is drawn first
    for _ in range(2):
        page.evaluate("() => new Promise((done) => (window.requestIdleCallback || setTimeout)(() => done(), { timeout: 1500 }))")
    own = own_words([*lesson_strings(page, base_url), *names])
    found = []
    for item in page.evaluate(COLLECT_JS):
        words = english_words(item["text"], own)
        if words:
            found.append(Finding(item["text"], item["where"], words))
    return found


# ---- the audit ---------------------------------------------------------------------------------------------------
LESSONS = [
    ("tp_mlp", 2, {}),
    ("sp_mlp", 2, {}),
    ("collectives", 4, {"op": "reduce_scatter", "sweep": "true"}),
    ("ring_allreduce", 4, {}),
    ("deadlock", 2, {"timeout_s": 1}),
    ("pp", 2, {"microbatches": 4}),
    ("dp", 2, {"bucketed": "true"}),
    ("zero", 2, {"stage": 3}),
    ("tp_attention", 2, {}),
    ("three_d", 4, {"dp": 1}),
    ("context_parallel", 2, {}),
    ("context_parallel", 2, {"method": "ulysses", "heads": 2}),
    ("expert_parallel", 2, {}),
    ("crash", 2, {"how": "raise"}),
]


def switch_to_chinese(page) -> None:
    if page.evaluate("document.documentElement.lang") != "zh-CN":
        page.get_by_role("button", name=re.compile("中文")).click()
        page.wait_for_function("document.documentElement.lang === 'zh-CN'")


def run_from_page(page, base_url: str, lesson: str, world_size: int, params: dict, *,
                  step: bool = False, wait: bool = True) -> None:
    """Open the lesson's page with `params`, press ▶ 运行, and (if `wait`) wait for the run's end."""
    query = "&".join(f"{k}={v}" for k, v in {"world_size": world_size, **params}.items())
    page.goto(f"{base_url}/lessons/{lesson}?{query}")
    switch_to_chinese(page)
    page.wait_for_selector(".run-button:not([disabled])")
    if step:
        page.locator("#step-mode").check()
    page.locator(".run-button").click()
    if wait and not step:
        page.wait_for_function(
            "['done', 'failed', 'cancelled'].includes(document.querySelector('#run-status').dataset.status)",
            timeout=90_000)


def scrub_to(page, fraction: float) -> None:
    """Put the cursor `fraction` of the way through the log and wait for the views to draw it."""
    total = page.evaluate("window.paralab.store.state.log.length")
    seq = max(1, round(total * fraction))
    page.locator("#scrubber input[type=range]").fill(str(seq))
    page.wait_for_function(f"document.querySelector('#now .now-seq')?.textContent === '#{seq}'")


def audit(browser, base_url: str) -> dict[str, list[Finding]]:
    """Every place the audit looks at → what is English there."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    report: dict[str, list[Finding]] = {}

    def look(place: str, on=None) -> None:
        report[place] = untranslated(on or page, base_url)

    page.goto(base_url + "/lessons/tp_mlp")
    switch_to_chinese(page)
    look("tp_mlp before a run")
    page.keyboard.press("?")
    look("the key list")
    page.keyboard.press("Escape")
    for lesson, world_size, params in LESSONS:
        run_from_page(page, base_url, lesson, world_size, params)
        for fraction in (0.1, 0.35, 0.6, 0.85, 1.0):
            scrub_to(page, fraction)
            look(f"{lesson} at {fraction:.0%}")
    run_from_page(page, base_url, "tp_mlp", 3, {"seq_len": 0}, wait=False)     # ffn=64 does not divide by 3, seq_len < 1: a 422
    page.wait_for_selector(".field-error:not([hidden])")
    look("tp_mlp refused (422)")
    run_from_page(page, base_url, "pp", 2, {"microbatches": 1, "virtual_stages": 2}, wait=False)
    page.wait_for_selector(".field-error:not([hidden])")
    look("pp refused (runtime rules)")
    run_from_page(page, base_url, "tp_mlp", 2, {}, step=True)
    page.wait_for_selector("#stepper:not([hidden]) button")
    page.wait_for_function("window.paralab.store.state.log.some((e) => e.kind === 'gate')")
    look("tp_mlp in step mode")
    page.locator("#cancel-run").click()
    page.wait_for_function("document.querySelector('#run-status').dataset.status === 'cancelled'")
    look("tp_mlp cancelled")
    audit_room(browser, page, look)
    context.close()
    return report


def present(page) -> None:
    """From a lesson page: Present, and wait for the room card and for the room's page to show the lesson
    (it may first be drawn with another, before the room's view names it)."""
    lesson = page.evaluate("document.querySelector('[data-lesson]').dataset.lesson")
    page.locator('[data-action="present"]').click()
    page.wait_for_url(re.compile(r"/rooms/[A-Z2-9]{8}$"))
    page.wait_for_selector("#room-card:not([hidden])")
    page.wait_for_function("(lesson) => document.querySelector('[data-lesson]').dataset.lesson === lesson", arg=lesson)


def audit_room(browser, page, look) -> None:
    base_url = page.url.split("/lessons/")[0]
    page.goto(f"{base_url}/lessons/tp_mlp?world_size=2")
    present(page)
    look("room: presenter, the room card")
    page.keyboard.press("Escape")
    page.locator(".run-button").click()
    page.wait_for_function("document.querySelector('#run-status').dataset.status === 'done'", timeout=90_000)
    scrub_to(page, 0.5)
    look("room: presenter, mid-run")
    page.locator('[data-action="earlier-runs"]').click()
    look("room: presenter, earlier runs")
    page.keyboard.press("Escape")
    follower_context = browser.new_context(viewport={"width": 1200, "height": 800})
    follower = follower_context.new_page()
    follower.goto(page.url)
    switch_to_chinese(follower)
    follower.wait_for_function("window.paralab?.store?.state.log.length > 0")
    look("room: follower, live", follower)
    follower.keyboard.press("ArrowLeft")
    follower.keyboard.press("0")                        # a step-mode key: only the presenter drives
    look("room: follower, detached", follower)
    follower.goto(f"{base_url}/rooms/ZZZZZZZZ")
    look("room: an unknown code", follower)
    follower_context.close()


def audit_on_a_server(browser, audit_pass, env: dict) -> dict[str, list[Finding]]:
    """`audit_pass(browser, url)` against a fresh server started with `env`."""
    from pathlib import Path
    from tempfile import mkdtemp

    from tests.conftest import LiveServer

    server = LiveServer(Path(mkdtemp(prefix="paralab-zh-audit-")), env=env).start()
    try:
        return audit_pass(browser, server.url)
    finally:
        server.stop()


def print_report(report: dict[str, list[Finding]]) -> int:
    """Each finding once, under the first place it was seen; the number of findings."""
    print(f"looked at {len(report)} places: {', '.join(report)}")
    seen: set[tuple[str, str]] = set()
    for place, findings in report.items():
        fresh = [f for f in findings if (f.text, f.where) not in seen]
        seen |= {(f.text, f.where) for f in fresh}
        if fresh:
            print(f"\n== {place}")
            for f in fresh:
                print(f"  {f.where}: {f.text!r}  {list(f.words)}")
    return len(seen)


def main(argv: list[str]) -> int:
    """Both passes, or the one named: `lessons` (the lecture mode) or `lab` (accounts on)."""
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
    from tests.browser.untranslated_lab import LAB_ENV, audit_lab_in

    passes = {"lessons": (audit, {}), "lab": (audit_lab_in, LAB_ENV)}
    chosen = argv or list(passes)
    report: dict[str, list[Finding]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        for name in chosen:
            audit_pass, env = passes[name]
            report |= {f"{name}: {place}": found for place, found in audit_on_a_server(browser, audit_pass, env).items()}
        browser.close()
    return 1 if print_report(report) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
