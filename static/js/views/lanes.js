/** One lane per rank: what the rank is doing at the cursor, and its timeline of spans so far. */

import { fill, h, s } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { activity } from "paralab/replay.js";

const ICON = { gate: "❚❚", compute: "⚙", collective: "⇄", p2p: "→", check: "✓", tensor: "▦", error: "✗", finished: "■", idle: "·", metric: "Σ" };

function timeline(rs, state, t0, t1) {
  const scale = (t) => ((t - t0) / Math.max(t1 - t0, 1e-6)) * 1000;
  const svg = s("svg", { class: "timeline", viewBox: "0 0 1000 24", preserveAspectRatio: "none", "aria-hidden": "true" });
  svg.append(s("line", { x1: 0, x2: 1000, y1: 12, y2: 12, class: "timeline-axis" }));
  for (const span of rs.spans) {
    const x0 = scale(span.t0);
    const x1 = scale(span.t1 ?? state.tNow);
    const collective = span.kind !== "compute";
    svg.append(s("rect", {
      x: x0, width: Math.max(x1 - x0, 3), y: collective ? 2 : 7, height: collective ? 20 : 10,
      fill: rankColour(rs.rank), "fill-opacity": collective ? 0.9 : 0.35, class: ["span", span.kind, span.t1 === null && "open"],
    }));
  }
  const e = state.event;
  if (e && e.rank === rs.rank) svg.append(s("line", { x1: scale(e.t), x2: scale(e.t), y1: 0, y2: 24, class: "timeline-now" }));
  return svg;
}

export function renderLanes(container, state) {
  if (!state.ranks.length) {
    fill(container, h("p", { class: "empty" }, "Press ▶ Run to start the ranks. Then step through what they did: Space or → next event, ← back, Home/End, or ▶ Play."));
    return;
  }
  const times = state.ranks.flatMap((rs) => rs.spans.map((sp) => sp.t0));
  const t0 = times.length ? Math.min(...times) : 0;
  const t1 = Math.max(state.tNow, t0 + 1e-3);
  const current = state.event?.rank;
  fill(container, h("ol", { class: "lanes" }, state.ranks.map((rs) => {
    const act = activity(rs, state);
    return h("li", {
      class: ["lane", `doing-${act.kind}`, current === rs.rank && "current", act.waiting && "waiting"],
      "data-rank": rs.rank, style: { "--rank": rankColour(rs.rank) },
    },
    h("span", { class: "rank-chip" }, `rank ${rs.rank}`),
    h("span", { class: "lane-icon", "aria-hidden": "true" }, ICON[act.kind] || "·"),
    h("span", { class: "lane-activity" },
      h("span", { class: "lane-text", title: act.text }, act.text),
      act.label ? h("span", { class: "lane-label" }, act.label) : null),
    timeline(rs, state, t0, t1));
  })));
}
