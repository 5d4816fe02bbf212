/**
 * A practice problem: its statement, an editor (a <textarea> under a highlighted <pre>, the lesson
 * pages' Python highlighter), and the judge's answer per check — passed or failed, the failing ranks,
 * and the values that differ (index, got, expected) or the communication expected and performed.
 * Tab indents with four spaces, Shift+Tab dedents, Ctrl+Enter (⌘+Enter) submits. The draft is kept
 * in localStorage per problem. Submissions go through the fair queue; while one waits, its position shows,
 * and Cancel takes it out of the queue or stops its judging.
 */

import { fill, h } from "paralab/dom.js";
import { api } from "paralab/lab.js";
import { renderMarkdown } from "paralab/markdown.js";
import { highlightPython } from "paralab/views/python.js";

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
  const draftKey = `paralab:draft:${id}`;

  const problem = await api("GET", `/api/problems/${id}`);
  root.querySelector(".statement").innerHTML = renderMarkdown(problem.statement);

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
    input.value = problem.starter;
    paint();
  });
  submit.addEventListener("click", send);
  cancel.addEventListener("click", stop);

  let busy = false;
  let pending = null;          // the id of the submission waiting or being judged
  async function send() {
    if (busy) return;
    busy = true;
    submit.disabled = true;
    fill(verdict);
    try {
      let submission = await api("POST", "/api/submissions", { problem: id, code: input.value });
      pending = submission.id;
      cancel.hidden = cancel.disabled = false;
      while (submission.status === "queued" || submission.status === "judging") {
        status.textContent = submission.status === "queued"
          ? `Waiting for the judge — position ${submission.position ?? "…"} in the queue`
          : "Judging on real ranks…";
        status.dataset.state = submission.status;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        submission = await api("GET", `/api/submissions/${submission.id}`);
      }
      showVerdict(submission);
    } catch (error) {
      status.textContent = error.message;
      status.dataset.state = "error";
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
    const passed = submission.checks.filter((c) => c.passed).length;
    status.dataset.state = submission.status;
    status.textContent = {
      passed: `Passed — all ${submission.checks.length} checks`,
      failed: `Failed — ${passed} of ${submission.checks.length} checks passed`,
      refused: "Refused — not run",
      cancelled: "Cancelled",
    }[submission.status] || submission.status;
    fill(verdict,
      submission.reason ? h("p", { class: "verdict-reason" }, submission.reason) : null,
      h("ul", { class: "check-list" }, submission.checks.map(renderCheck)));
  }

  async function loadHistory() {
    try {
      const mine = await api("GET", `/api/submissions?problem=${encodeURIComponent(id)}&limit=10`);
      fill(history, ...mine.map((s) => h("li", { "data-state": s.status },
        `${new Date(s.created_at * 1000).toLocaleTimeString()} — ${s.status}`,
        s.position ? ` (position ${s.position})` : "")));
    } catch { /* not signed in any more: the next submit says so */ }
  }
  loadHistory();
}

const num = (v) => (typeof v === "number" ? Number(v.toPrecision(6)).toString() : String(v));

function renderCheck(check) {
  const failure = check.first_failure;
  return h("li", { class: ["check", check.passed ? "pass" : "fail"], "data-check": check.name },
    h("div", { class: "check-head" },
      h("span", { class: "check-badge" }, check.passed ? "PASS" : "FAIL"),
      h("strong", {}, check.name),
      check.passed ? null : h("span", { class: "check-ranks" }, ` on rank${check.failing_ranks.length > 1 ? "s" : ""} ${check.failing_ranks.join(", ")}`)),
    check.detail ? h("p", { class: "check-detail" }, check.detail) : null,
    failure && failure.max_abs_err !== undefined ? h("p", {}, `max abs error ${num(failure.max_abs_err)}`) : null,
    failure?.differences?.length ? h("table", { class: "lab-table differences" },
      h("thead", {}, h("tr", {}, h("th", {}, "at"), h("th", {}, "got"), h("th", {}, "expected"))),
      h("tbody", {}, failure.differences.map((d) => h("tr", {},
        h("td", {}, JSON.stringify(d.index)), h("td", { class: "got" }, num(d.got)), h("td", {}, num(d.expected)))))) : null,
    failure?.expected ? h("dl", { class: "communication" },
      h("dt", {}, "expected"), h("dd", {}, failure.expected.join("; ") || "nothing"),
      h("dt", {}, "performed"), h("dd", {}, (failure.performed || []).join("; ") || "nothing")) : null);
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
