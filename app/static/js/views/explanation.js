/** The lesson's explanation (Markdown from its own files), with its self-check answers to reveal; a
 * question opened counts as answered in the learner's progress (progress.js). Sections the lesson marks
 * as explaining some events (workers/lessons/explain_steps.py) are highlighted while the cursor is on
 * the phase they explain. */

import { fill, h } from "paralab/dom.js";
import { renderMarkdown } from "paralab/markdown.js";
import { markAnswered, markQuestions } from "paralab/progress.js";

const linked = new WeakMap();     // the container → [{when, nodes}]: each marked section's elements

export function renderExplanation(container, markdown, lessonId = null, steps = []) {
  linked.set(container, []);
  if (!markdown || !markdown.trim()) {
    fill(container, h("p", { class: "empty" }, "This lesson has no explanation yet."));
    return;
  }
  container.innerHTML = renderMarkdown(markdown);   // safe: the renderer escapes all HTML but details/summary
  const questions = [...container.querySelectorAll("details")];
  questions.forEach((details, index) => {
    details.classList.add("self-check");
    if (lessonId) details.addEventListener("toggle", () => details.open && markAnswered(lessonId, index));
  });
  if (lessonId && questions.length) markQuestions(lessonId, questions.length);
  linked.set(container, linkSections(container, steps));
}

/** Each step's section: its heading (a `## ` heading is drawn as an h3: the page's title is the h1) and
 *  what follows it up to the next heading of its level or above. */
function linkSections(container, steps) {
  const headings = [...container.querySelectorAll("h2, h3, h4, h5, h6")];
  const level = (el) => (/^H[1-6]$/.test(el.tagName) ? Number(el.tagName[1]) : Infinity);
  return steps.map(({ heading, when }) => {
    const start = headings.find((el) => el.textContent.trim() === heading.trim());
    if (!start) return null;
    const nodes = [start];
    for (let el = start.nextElementSibling; el && level(el) > level(start); el = el.nextElementSibling) nodes.push(el);
    start.dataset.explains = Object.entries(when).map(([k, v]) => `${k}=${v.join("|")}`).join(" ; ");
    return { when, nodes };
  }).filter(Boolean);
}

/** Whether event `e` is one a marker names: each field one of its values, `text*` any text starting so
 *  (as workers/lessons/explain_steps.py's `matches`). */
const fits = (value, wanted) => (wanted.endsWith("*") ? value.startsWith(wanted.slice(0, -1)) : value === wanted);
const matches = (when, e) => Object.entries(when).every(([field, values]) => field in e && values.some((v) => fits(String(e[field]), v)));

/** Highlight the section that explains the latest event at or before `cursor` one of them matches. */
export function showExplained(container, log, cursor) {
  const sections = linked.get(container) || [];
  if (!sections.length) return;
  const found = latestMatches(container, sections, log, Math.min(cursor, log.length - 1));
  const now = found >= 0 ? sections[found] : null;
  if (shownSection.get(container) === now) return;
  shownSection.set(container, now);
  for (const section of sections) {
    for (const node of section.nodes) node.classList.toggle("explaining", section === now);
  }
}

// For each event of the log looked at, the section matched by the latest event at or before it (-1: none),
// kept: searching back from the cursor at each move read thousands of events on a big run (an End at the
// end of a pipeline run, where no section matches the last events). A search back stops at the first
// event that matches or whose answer is kept, and keeps the answer for every event it passed.
const matchedUpTo = new WeakMap();   // the container → {sections, log, latest: Int32Array (-2: not known yet)}
const shownSection = new WeakMap();  // the container → the section highlighted now
const UNKNOWN = -2;

function latestMatches(container, sections, log, index) {
  if (index < 0) return -1;
  let memo = matchedUpTo.get(container);
  if (!memo || memo.sections !== sections || memo.log !== log) {
    memo = { sections, log, latest: new Int32Array(0) };
    matchedUpTo.set(container, memo);
  }
  if (memo.latest.length < log.length) {       // a live run's log grew: room for its new events
    const grown = new Int32Array(Math.max(log.length, 2 * memo.latest.length)).fill(UNKNOWN);
    grown.set(memo.latest);
    memo.latest = grown;
  }
  const { latest } = memo;
  let i = index;
  let found = -1;
  for (; i >= 0; i--) {
    if (latest[i] !== UNKNOWN) { found = latest[i]; break; }
    const own = sections.findIndex((s) => matches(s.when, log[i]));
    if (own >= 0) { found = own; break; }
  }
  latest.fill(found, Math.max(i, 0), index + 1);
  return found;
}
