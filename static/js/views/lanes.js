/**
 * One lane per rank: what the rank is doing at the cursor, and its timeline of spans so far.
 * A step changes a lane's words and a span or two, so the lanes are kept and changed in place.
 */

import { cacheOf, fill, h, morph, place, s, setAttributes } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { activity } from "paralab/replay.js";

const ICON = { gate: "❚❚", compute: "⚙", collective: "⇄", p2p: "→", check: "✓", tensor: "▦", error: "✗", finished: "■", idle: "·", metric: "Σ" };
const WIDTH = 1000;          // the timeline's viewBox width
const MIN_SPAN = 3;          // the narrowest span drawn, in viewBox units

const timelines = new WeakMap();    // a lane's timeline <svg> → its parts {axis, group, nowLine, start, rects}

function laneItem(rank) {
  const parts = { axis: s("line", { x1: 0, x2: WIDTH, y1: 12, y2: 12, class: "timeline-axis" }), group: s("g", { class: "timeline-spans" }),
                  nowLine: s("line", { y1: 0, y2: 24, class: "timeline-now" }), start: null, rects: new Map() };
  const svg = s("svg", { class: "timeline", viewBox: `0 0 ${WIDTH} 24`, preserveAspectRatio: "none", "aria-hidden": "true" });
  timelines.set(svg, parts);
  return h("li", { class: "lane", "data-rank": rank, style: { "--rank": rankColour(rank) } },
    h("span", { class: "rank-chip" }, `rank ${rank}`),
    h("span", { class: "lane-icon", "aria-hidden": "true" }),
    h("span", { class: "lane-activity" }),
    svg);
}

function showActivity(lane, rs, state) {
  const act = activity(rs, state);
  setAttributes(lane, { class: ["lane", `doing-${act.kind}`, state.event?.rank === rs.rank && "current", act.waiting && "waiting"].filter(Boolean).join(" ") });
  morph(lane.querySelector(".lane-icon"), ICON[act.kind] || "·");
  morph(lane.querySelector(".lane-activity"), h("span", { class: "lane-text", title: act.text }, act.text),
    act.label ? h("span", { class: "lane-label" }, act.label) : null);
}

/**
 * The spans between `t0` and `t1` across the lane. They are drawn in seconds since `t0` inside a group
 * scaled to the viewBox, so a step that moves `t1` rescales the group and leaves the spans' own
 * coordinates alone (only those drawn at the narrowest width change).
 */
function showTimeline(svg, rs, state, t0, t1) {
  const parts = timelines.get(svg);
  const k = WIDTH / Math.max(t1 - t0, 1e-6);
  // The narrowest width in seconds, from k rounded down to a power of 2^¼: it changes every few steps, not
  // at every step (and with it every narrow span), and draws those spans at most a fifth wider.
  const narrowest = MIN_SPAN / 2 ** (Math.floor(4 * Math.log2(k)) / 4);
  setAttributes(parts.group, { transform: `scale(${k} 1)` });
  if (parts.start !== t0) Object.assign(parts, { start: t0, rects: new Map() });
  const rects = new Map();
  for (const span of rs.spans) {
    const rect = parts.rects.get(span.seq) || s("rect", {});
    const collective = span.kind !== "compute";
    setAttributes(rect, {
      x: span.t0 - t0, width: Math.max((span.t1 ?? state.tNow) - span.t0, narrowest), y: collective ? 2 : 7, height: collective ? 20 : 10,
      fill: rankColour(rs.rank), "fill-opacity": collective ? 0.9 : 0.35, class: ["span", span.kind, span.t1 === null && "open"].filter(Boolean).join(" "),
    });
    rects.set(span.seq, rect);
  }
  parts.rects = rects;
  place(parts.group, [...rects.values()]);
  const e = state.event;
  const here = e && e.rank === rs.rank;
  if (here) setAttributes(parts.nowLine, { x1: (e.t - t0) * k, x2: (e.t - t0) * k });
  place(svg, here ? [parts.axis, parts.group, parts.nowLine] : [parts.axis, parts.group]);
}

export function renderLanes(container, state) {
  if (!state.ranks.length) {
    fill(container, h("p", { class: "empty" }, document.body.dataset.role === "follower"
      ? "Waiting for the presenter to start a run: it appears here, live, as soon as it starts."
      : "Press ▶ Run to start the ranks. Then step through what they did: Space or → next event, ← back, Home/End, or ▶ Play."));
    return;
  }
  const times = state.ranks.flatMap((rs) => rs.spans.map((sp) => sp.t0));
  const t0 = times.length ? Math.min(...times) : 0;
  const t1 = Math.max(state.tNow, t0 + 1e-3);
  const list = container.querySelector(":scope > ol.lanes") || fill(container, h("ol", { class: "lanes" })).firstChild;
  const cache = cacheOf(container);
  place(list, state.ranks.map((rs) => {
    const lane = cache.get(`lane ${rs.rank}`, () => laneItem(rs.rank));
    showActivity(lane, rs, state);
    showTimeline(lane.querySelector(".timeline"), rs, state, t0, t1);
    return lane;
  }));
  cache.done();
}
