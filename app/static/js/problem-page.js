/**
 * A practice problem: its statement, an editor (a <textarea> under a highlighted <pre>, the lesson
 * pages' Python highlighter), and the judge's answer per check — passed or failed, the failing ranks,
 * and the values that differ (index, got, expected) or the communication expected and performed.
 * Tab indents with four spaces, Shift+Tab dedents, Ctrl+Enter (⌘+Enter) submits; Starter code is an
 * edit Ctrl+Z takes back. The draft is kept in localStorage per learner and problem (and forgotten when
 * they sign out). Submissions go through the fair queue; while one waits, its position shows, and
 * Cancel takes it out of the queue or stops its judging; back on the page (a reload, another day) it is
 * followed again, or the last verdict shows, and each line of the history shows its verdict and the code
 * it judged. A verdict links to the run the judge watched, recorded as the submission owner's run: the
 * playground's page steps through it in replay.
 * The page's words are in the interface's language and drawn again when it changes. The problem's own
 * words — its title, statement, function docs, the checks' names and details — come in the languages
 * the problem has (statement.<lang>.md, texts.<lang>.json); where it lacks the current one they stay
 * English and say so with lang="en".
 */

import { fill, h } from "paralab/dom.js";
import { currentLang, t, tText } from "paralab/i18n.js";
import { api, clock, errorText, showWords } from "paralab/lab.js";
import { renderMarkdown } from "paralab/markdown.js";
import { highlightPython } from "paralab/views/python.js";
import { here } from "paralab/root.js";

const INDENT = "    ";
const POLL_MS = 400;

export async function startProblemPage(root) {
  const id = root.dataset.problem;
  const input = root.querySelector(".editor-input");
  const highlight = root.querySelector(".editor-highlight code");
  const status = root.querySelector(".verdict-status");
  const verdict = root.querySelector(".verdict");
  const history = root.querySelector(".history");
  const submit = root.querySelector('[data-action="submit"]');
  const cancel = root.querySelector('[data-action="cancel"]');
  const draftKey = `paralab:draft:${document.querySelector(".lab-user")?.dataset.user ?? ""}:${id}`;   // per learner

  const problem = await api("GET", `/api/problems/${id}`);
  problemTexts = problem.texts || {};
  const showProblemWords = () => {
    const lang = currentLang();
    const own = problem.statements?.[lang];
    const statement = root.querySelector(".statement");
    statement.innerHTML = renderMarkdown(own ?? problem.statement);
    statement.querySelector(":scope > :is(h1, h2, h3):first-child")?.remove();   // the title, shown above it
    Object.assign(statement, { lang: own ? lang : "en", translate: false });
    const title = root.querySelector(".problem-statement h1");
    Object.assign(title, problemsWords(problem.title, problemTexts[lang]?.title));
    root.querySelectorAll(".functions li").forEach((item, i) => {
      const f = problem.functions[i];
      if (f) Object.assign(item.querySelector("p"), problemsWords(f.doc, problemTexts[lang]?.functions?.[f.name]));
    });
  };
  showProblemWords();
  document.addEventListener("paralab:lang", showProblemWords);

  const paint = () => {
    highlight.innerHTML = highlightPython(input.value).join("\n") + "\n ";
    try { localStorage.setItem(draftKey, input.value); } catch { /* this page only */ }
  };
  const sync = () => {
    highlight.parentElement.scrollTop = input.scrollTop;
    highlight.parentElement.scrollLeft = input.scrollLeft;
  };
  let draft = null;
  try { draft = localStorage.getItem(draftKey); } catch { /* none */ }
  input.value = draft || problem.starter;
  input.readOnly = false;            // read-only until now: what is typed before the problem loads would be lost
  paint();
  input.addEventListener("input", paint);
  input.addEventListener("scroll", sync);
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      send();
    } else if (event.key === "Tab") {
      event.preventDefault();
      indent(input, event.shiftKey);
      paint();
    }
  });
  root.querySelector('[data-action="reset"]').addEventListener("click", () => {
    // as an edit of the text, not a new value: Ctrl+Z (⌘Z) brings the learner's code back
    input.focus();
    input.select();
    if (!document.execCommand("insertText", false, problem.starter)) input.value = problem.starter;
    input.setSelectionRange(0, 0);
    input.scrollTop = 0;
    paint();
  });
  submit.addEventListener("click", send);
  cancel.addEventListener("click", stop);

  let busy = false;
  let pending = null;          // the id of the submission waiting or being judged
  let shown = null;            // the submission whose verdict is shown
  const setStatus = (state, words) => {
    status.dataset.state = state;
    showWords(status, words);
  };
  document.addEventListener("paralab:lang", () => {
    if (shown) showVerdict(shown);
    loadHistory();
  });
  function send() {
    return judged(() => api("POST", "/api/submissions", { problem: id, code: input.value }));
  }

  /** Follow a submission (`start()` gives it: a new one, or one still waiting when the page opened)
   * until its verdict, shown with its checks. */
  async function judged(start) {
    if (busy) return;
    busy = true;
    submit.disabled = true;
    shown = null;
    fill(verdict);
    try {
      let submission = await start();
      pending = submission.id;
      cancel.hidden = cancel.disabled = false;
      let judgingSince = null;
      while (submission.status === "queued" || submission.status === "judging") {
        const { status: state, position } = submission;
        if (state === "judging") judgingSince ??= Date.now();
        const seconds = judgingSince === null ? 0 : Math.floor((Date.now() - judgingSince) / 1000);
        setStatus(state, () => (state === "queued"
          ? t("Waiting for the judge — position {position} in the queue", { position: position ?? "…" })
          : t("Judging on {world} real ranks… {seconds} s", { world: problem.world_size, seconds })));
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        submission = await api("GET", `/api/submissions/${submission.id}`);
      }
      showVerdict(submission.code === undefined ? await api("GET", `/api/submissions/${submission.id}`) : submission);
    } catch (error) {
      setStatus("error", () => errorText(error));
    } finally {
      busy = false;
      pending = null;
      submit.disabled = false;
      cancel.hidden = true;
      loadHistory();
    }
  }

  async function stop() {
    if (!pending) return;
    cancel.disabled = true;
    try {
      await api("DELETE", `/api/submissions/${pending}`);
    } catch {
      /* it got its verdict first: the loop above shows it */
    }
  }

  function showVerdict(submission) {
    shown = submission;
    setStatus(submission.status, () => verdictLine(submission));
    fill(verdict,
      submission.reason ? h("p", { class: "verdict-reason" }, tText(submission.reason)) : null,
      submission.note ? h("p", { class: "verdict-note" }, tText(submission.note)) : null,
      submission.run ? h("p", { class: "verdict-run" }, h("a", { href: here(`/playground?run=${encodeURIComponent(submission.run)}&seq=1`),
        target: "_blank", rel: "noopener" }, t("Step through this run"))) : null,
      h("ul", { class: "check-list" }, submission.checks.map(renderCheck)),
      typeof submission.code === "string" ? h("details", { class: "verdict-code" },
        h("summary", {}, t("The code you submitted")), h("pre", { translate: "no", tabindex: "0" }, submission.code)) : null);
  }

  /** A past submission's verdict (its history line pressed), with the code it was. */
  async function showSubmission(sid) {
    if (busy) return;
    try {
      showVerdict(await api("GET", `/api/submissions/${encodeURIComponent(sid)}`));
    } catch (error) {
      setStatus("error", () => errorText(error));
    }
  }

  /** Your last submissions of this problem, newest first, each a button that shows its verdict. */
  async function loadHistory() {
    try {
      const mine = await api("GET", `/api/submissions?problem=${encodeURIComponent(id)}&limit=10`);
      fill(history, ...mine.map((s) => h("li", { "data-state": s.status },
        h("button", { type: "button", class: "history-item", "data-submission": s.id, onclick: () => showSubmission(s.id) },
          t("{time} — {status}", { time: clock(s.created_at), status: t(s.status) }),
          s.position ? ` ${t("(position {position})", { position: s.position })}` : ""))));
      return mine;
    } catch { /* not signed in any more: the next submit says so */ }
    return [];
  }

  // Back on the page: a submission still waiting or being judged is followed again; else the last verdict shows.
  const latest = (await loadHistory())[0];
  if (latest?.status === "queued" || latest?.status === "judging") judged(async () => latest);
  else if (latest) showSubmission(latest.id);
}

/** The verdict in one line: "Failed — 1 of 2 checks passed (1 not compared)". A check that could not be
 * made (the traffic of ranks that hung) is neither a pass nor a failure. */
function verdictLine(submission) {
  const made = submission.checks.filter((c) => c.compared !== false);
  const total = made.length;
  const passed = made.filter((c) => c.passed).length;
  const skipped = submission.checks.length - total;
  const line = {
    passed: () => t("Passed — all {total} checks", { total }),
    failed: () => t("Failed — {passed} of {total} checks passed", { passed, total }),
    refused: () => t("Refused — not run"),
    cancelled: () => t("Cancelled"),
  }[submission.status]?.() ?? t(submission.status);
  return skipped && total ? `${line} ${t("({n} not compared)", { n: skipped })}` : line;
}

const num = (v) => (typeof v === "number" ? Number(v.toPrecision(6)).toString() : String(v));
let problemTexts = {};       // the problem's texts.<lang>.json, by language

/** A text of the problem's in the current language where it has one, else English marked so. */
function problemsWords(english, translated) {
  return translated ? { textContent: translated, lang: currentLang() } : { textContent: english, lang: "en" };
}

/** A check's name or detail: the problem's translation of it; a detail the checker extended with
 * " — what differed" keeps that part as it came. */
function ownText(english) {
  const words = problemTexts[currentLang()]?.text || {};
  if (words[english]) return problemsWords(english, words[english]);
  const cut = english.indexOf(" — ");
  const head = cut < 0 ? null : words[english.slice(0, cut)];
  return head ? problemsWords(english, `${head} — ${english.slice(cut + 3)}`) : problemsWords(english, null);
}

function problemsOwn(tag, attrs, text) {                 // the harness's words
  const { textContent, lang } = ownText(text);
  return h(tag, { ...attrs, lang }, textContent);
}

/** The calls a communication check expected or saw, in the harness's words ("nothing" is the page's). */
const calls = (list) => (list?.length ? problemsOwn("dd", {}, list.join("; ")) : h("dd", {}, t("nothing")));

/** The differences in index order ([0, 3] before [1, 0]), not in the order of how far off they are. */
function byIndex(a, b) {
  const [x, y] = [[a.index].flat(), [b.index].flat()];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

function renderCheck(check) {
  const failure = check.first_failure;
  const ranks = check.failing_ranks.join(", ");
  const made = check.compared !== false;
  return h("li", { class: ["check", !made ? "skipped" : check.passed ? "pass" : "fail"], "data-check": check.name },
    h("div", { class: "check-head" },
      h("span", { class: "check-badge" }, !made ? t("NOT COMPARED") : check.passed ? t("PASS") : t("FAIL")),
      problemsOwn("strong", {}, check.name),
      check.passed ? null : h("span", { class: "check-ranks" },
        ` ${t(check.failing_ranks.length > 1 ? "on ranks {ranks}" : "on rank {ranks}", { ranks })}`)),
    check.detail ? problemsOwn("p", { class: "check-detail" }, check.detail) : null,
    typeof failure?.max_abs_err === "number" ? h("p", {}, t("max abs error {error}", { error: num(failure.max_abs_err) })) : null,   // not "inf": a rank that reported nothing
    failure?.differences?.length ? h("table", { class: "lab-table differences" },
      h("thead", {}, h("tr", {}, h("th", {}, t("rank")), h("th", {}, t("at")), h("th", {}, t("got")), h("th", {}, t("expected")))),
      h("tbody", {}, [...failure.differences].sort(byIndex).map((d) => h("tr", {},
        h("td", {}, String(failure.rank)), h("td", {}, JSON.stringify(d.index)),
        h("td", { class: "got" }, num(d.got)), h("td", {}, num(d.expected)))))) : null,
    failure?.expected ? h("dl", { class: "communication" },
      h("dt", {}, t("expected")), calls(failure.expected),
      h("dt", {}, t("performed")), calls(failure.performed)) : null);
}

/** Tab: four spaces at the caret, or before every selected line; Shift+Tab takes up to four away. */
function indent(input, out) {
  const { value, selectionStart: start, selectionEnd: end } = input;
  if (!out && start === end) {
    input.setRangeText(INDENT, start, end, "end");
    return;
  }
  const lineStart = value.lastIndexOf("\n", start - 1) + 1;
  const block = value.slice(lineStart, end);
  const changed = block.split("\n").map((line) => (out ? line.replace(/^ {1,4}/, "") : INDENT + line)).join("\n");
  input.setRangeText(changed, lineStart, end, "select");
}
