/**
 * A learner's progress through the course, kept in this browser (localStorage "paralab:progress"):
 * for each lesson, whether a run of it was seen to the end, and which of its self-check questions were
 * opened. The lesson page records; the index shows it on each card and for the whole course.
 *
 * In the hosted lab it is kept per account too (GET/PUT /api/progress): the first time a page asks
 * (`syncProgress`), the account's progress and this browser's are merged both ways — what was done
 * here before signing in is added to the account, not lost — and each later change is sent. Progress
 * only grows: a run seen stays seen, an answered question stays answered. The browser remembers whose
 * progress it holds ("paralab:progress-of"): another account signed in on the same machine starts from
 * its own, and signing out forgets it (`forgetLearner` in lab.js). In the lecture mode (no
 * `data-accounts` on the page's root) progress stays in the browser and the server is not asked.
 */

import { t } from "paralab/i18n.js";
import { here } from "paralab/root.js";

const KEY = "paralab:progress";
const OWNER_KEY = "paralab:progress-of";   // the account this browser's progress was merged with

function load() {
  try {
    const stored = JSON.parse(localStorage.getItem(KEY) || "{}");
    return stored && typeof stored === "object" ? stored : {};
  } catch {
    return {};
  }
}

function save(all) {
  try {
    localStorage.setItem(KEY, JSON.stringify(all));
  } catch { /* private mode: progress is not kept */ }
}

function owner() {
  try {
    return localStorage.getItem(OWNER_KEY);
  } catch {
    return null;
  }
}

const EMPTY = { ran: false, answered: [], questions: 0 };

function merged(a = EMPTY, b = EMPTY) {
  return { ran: Boolean(a.ran || b.ran), answered: [...new Set([...(a.answered || []), ...(b.answered || [])])].sort((x, y) => x - y),
    questions: Math.max(a.questions || 0, b.questions || 0) };
}

async function sendProgress(lessons) {
  const response = await fetch(here("/api/progress"), {
    method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ lessons }),
  });
  return response.ok ? (await response.json()).lessons : null;
}

let synced = null;     // the promise of the first merge with the account: true when the server keeps progress

/** Merge this browser's progress with the signed-in account's, once per page; true in the hosted lab. */
export function syncProgress() {
  synced ??= (async () => {
    if (!("accounts" in document.documentElement.dataset)) return false;
    try {
      const response = await fetch(here("/api/progress"));
      if (!response.ok) return false;
      const { user, lessons: account } = await response.json();
      const local = owner() === null || owner() === user ? load() : {};   // another account's: not this one's
      try { localStorage.setItem(OWNER_KEY, user); } catch { /* private mode */ }
      const both = {};
      for (const id of new Set([...Object.keys(account), ...Object.keys(local)])) both[id] = merged(account[id], local[id]);
      save(both);
      if (JSON.stringify(both) !== JSON.stringify(Object.fromEntries(Object.keys(both).map((id) => [id, merged(account[id])])))) {
        await sendProgress(both).catch(() => null);
      }
      return true;
    } catch {
      return false;
    }
  })();
  return synced;
}

function update(lessonId, change) {
  const all = load();
  const before = JSON.stringify(all[lessonId] || {});
  all[lessonId] = change({ ...EMPTY, ...all[lessonId] });
  if (JSON.stringify(all[lessonId]) === before) return;
  save(all);
  const lesson = { [lessonId]: all[lessonId] };
  syncProgress().then((perAccount) => perAccount && sendProgress(lesson)).catch(() => null);
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
