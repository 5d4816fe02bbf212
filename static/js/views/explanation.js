/** The lesson's explanation (Markdown from its own files), with its self-check answers to reveal. */

import { fill, h } from "paralab/dom.js";
import { renderMarkdown } from "paralab/markdown.js";

export function renderExplanation(container, markdown) {
  if (!markdown || !markdown.trim()) {
    fill(container, h("p", { class: "empty" }, "This lesson has no explanation yet."));
    return;
  }
  container.innerHTML = renderMarkdown(markdown);   // safe: the renderer escapes all HTML but details/summary
  for (const details of container.querySelectorAll("details")) details.classList.add("self-check");
}
