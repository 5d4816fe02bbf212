/** Earlier runs of this lesson (newest first), each a link that replays it — shown before a run is chosen. */

import { fill, h } from "paralab/dom.js";
import { t, tPlural } from "paralab/i18n.js";

/** "2 min ago · 14:03:12": how long ago, and the time of day that tells runs a minute apart from each other. */
function when(seconds) {
  const ago = Math.max(0, Date.now() / 1000 - seconds);
  const at = new Date(seconds * 1000);
  if (ago >= 129600) return at.toLocaleDateString();
  const relative = ago < 90 ? t("just now") : ago < 5400 ? t("{n} min ago", { n: Math.round(ago / 60) })
    : t("{n} h ago", { n: Math.round(ago / 3600) });
  return `${relative} · ${at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false })}`;
}

/** A program's text (the playground's `source`): its run's page shows it, not a line of a list. */
const isProgram = (value) => typeof value === "string" && (value.includes("\n") || value.length > 60);

/** Each list on the page and what it was drawn from: drawn again in a new language. */
const shown = new Map();
document.addEventListener("paralab:lang", () => {
  for (const [container, args] of shown) renderRecentRuns(container, ...args);
});

/**
 * `onShow` (a lecture room's presenter): each run also gets a "Show to the room" button that calls it
 * with the run; `current`, the run on screen, is marked so; `limit` runs at most.
 */
export function renderRecentRuns(container, runs, lessonId, { onShow = null, limit = 6, current = null } = {}) {
  shown.set(container, [runs, lessonId, { onShow, limit, current }]);
  const mine = runs.filter((r) => r.lesson === lessonId).slice(0, limit);
  container.hidden = mine.length === 0;
  if (!mine.length) return;
  fill(container,
    h("h2", {}, "Earlier runs of this lesson"),
    h("ul", { class: "recent-runs" }, mine.map((r) => {
      const query = new URLSearchParams({ world_size: r.world_size, ...r.params, run: r.id });
      return h("li", { "aria-current": r.id === current ? "true" : null },
        h("a", { href: `?${query}` }, tPlural(r.world_size, "{n} rank", "{n} ranks"),
          h("span", { class: "recent-params" }, Object.entries(r.params).filter(([, v]) => !isProgram(v))
            .map(([k, v]) => ` · ${k} ${v === null ? t("default") : v}`).join(""))),
        r.id === current ? h("span", { class: "recent-current" }, "on screen") : null,
        h("span", { class: `recent-status status-${r.status}` }, t(r.status)),
        h("span", { class: "recent-when" }, when(r.created_at)),
        onShow ? h("button", { type: "button", class: "recent-show", "data-run": r.id, onclick: () => onShow(r) },
          "Show to the room") : null);
    })));
}
