/** Earlier runs of this lesson (newest first), each a link that replays it — shown before a run is chosen. */

import { fill, h } from "paralab/dom.js";
import { t, tPlural } from "paralab/i18n.js";

function when(seconds) {
  const ago = Math.max(0, Date.now() / 1000 - seconds);
  if (ago < 90) return t("just now");
  if (ago < 5400) return t("{n} min ago", { n: Math.round(ago / 60) });
  if (ago < 129600) return t("{n} h ago", { n: Math.round(ago / 3600) });
  return new Date(seconds * 1000).toLocaleDateString();
}

/** Each list on the page and what it was drawn from: drawn again in a new language. */
const shown = new Map();
document.addEventListener("paralab:lang", () => {
  for (const [container, args] of shown) renderRecentRuns(container, ...args);
});

/**
 * `onShow` (a lecture room's presenter): each run also gets a "Show to the room" button that calls it
 * with the run; `limit` runs at most.
 */
export function renderRecentRuns(container, runs, lessonId, { onShow = null, limit = 6 } = {}) {
  shown.set(container, [runs, lessonId, { onShow, limit }]);
  const mine = runs.filter((r) => r.lesson === lessonId).slice(0, limit);
  container.hidden = mine.length === 0;
  if (!mine.length) return;
  fill(container,
    h("h2", {}, "Earlier runs of this lesson"),
    h("ul", { class: "recent-runs" }, mine.map((r) => {
      const query = new URLSearchParams({ world_size: r.world_size, ...r.params, run: r.id });
      return h("li", {},
        h("a", { href: `?${query}` }, tPlural(r.world_size, "{n} rank", "{n} ranks"),
          h("span", { class: "recent-params" }, Object.entries(r.params).map(([k, v]) => ` · ${k} ${v}`).join(""))),
        h("span", { class: `recent-status status-${r.status}` }, t(r.status)),
        h("span", { class: "recent-when" }, when(r.created_at)),
        onShow ? h("button", { type: "button", class: "recent-show", "data-run": r.id, onclick: () => onShow(r) },
          "Show to the room") : null);
    })));
}
