/**
 * A learner's progress through the course, kept in this browser (localStorage "paralab:progress"):
 * for each lesson, whether a run of it was seen to the end, and which of its self-check questions were
 * opened. The lesson page records; the index shows it on each card and for the whole course.
 */

import { t } from "paralab/i18n.js";

const KEY = "paralab:progress";

function load() {
  try {
    const stored = JSON.parse(localStorage.getItem(KEY) || "{}");
    return stored && typeof stored === "object" ? stored : {};
  } catch {
    return {};
  }
}

function update(lessonId, change) {
  const all = load();
  const before = JSON.stringify(all[lessonId] || {});
  all[lessonId] = change({ ran: false, answered: [], questions: 0, ...all[lessonId] });
  if (JSON.stringify(all[lessonId]) === before) return;
  try {
    localStorage.setItem(KEY, JSON.stringify(all));
  } catch { /* private mode: progress is not kept */ }
}

/** A run of this lesson was seen to its end (done). */
export function markRan(lessonId) {
  update(lessonId, (p) => ({ ...p, ran: true }));
}

/** The lesson's explanation has `count` self-check questions. */
export function markQuestions(lessonId, count) {
  update(lessonId, (p) => ({ ...p, questions: count }));
}

/** Self-check question `index` was opened (its answer read). */
export function markAnswered(lessonId, index) {
  update(lessonId, (p) => ({ ...p, answered: [...new Set([...p.answered, index])].sort((a, b) => a - b) }));
}

export function progressOf(lessonId) {
  return { ran: false, answered: [], questions: 0, ...load()[lessonId] };
}

/** On the index: each card's progress, and the course's. */
export function showProgress(root) {
  const cards = [...root.querySelectorAll(".lesson-card[data-card]")];
  let ran = 0;
  for (const card of cards) {
    const p = progressOf(card.dataset.card);
    const words = [p.ran ? `✓ ${t("ran")}` : null,
      p.questions ? t("{n} of {total} questions answered", { n: p.answered.length, total: p.questions }) : null].filter(Boolean);
    const badge = card.querySelector(".lesson-progress");
    badge.hidden = !words.length;
    badge.textContent = words.join(" · ");
    card.classList.toggle("done", p.ran);
    ran += p.ran ? 1 : 0;
  }
  const total = root.querySelector(".course-progress");
  if (total && ran) {
    total.hidden = false;
    total.textContent = t("{n} of {total} lessons run", { n: ran, total: cards.length });
  }
}
