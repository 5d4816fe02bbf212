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
  let now = null;
  for (let i = Math.min(cursor, log.length - 1); i >= 0 && !now; i--) now = sections.find((s) => matches(s.when, log[i])) || null;
  for (const section of sections) {
    for (const node of section.nodes) node.classList.toggle("explaining", section === now);
  }
}
