/** The lesson's explanation (Markdown from its own files), with its self-check answers to reveal; a
 * question opened counts as answered in the learner's progress (progress.js). */

import { fill, h } from "paralab/dom.js";
import { renderMarkdown } from "paralab/markdown.js";
import { markAnswered, markQuestions } from "paralab/progress.js";

export function renderExplanation(container, markdown, lessonId = null) {
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
}
