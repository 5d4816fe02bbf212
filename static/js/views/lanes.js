/**
 * One lane per rank: what the rank is doing at the cursor, and its timeline of spans so far.
 * A step changes a lane's words and a span or two, so the lanes are kept and changed in place.
 */

import { cacheOf, fill, h, morph, place, remPx, setAttributes, sizeOf } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { activity } from "paralab/replay.js";

const ICON = { gate: "❚❚", compute: "⚙", collective: "⇄", p2p: "→", check: "✓", tensor: "▦", error: "✗", finished: "■", idle: "·", metric: "Σ" };
const MIN_SPAN_PX = 1.5;     // the narrowest span drawn

function laneItem(rank) {
  return h("li", { class: "lane", "data-rank": rank, style: { "--rank": rankColour(rank) } },
    h("span", { class: "rank-chip" }, `rank ${rank}`),
    h("span", { class: "lane-icon", "aria-hidden": "true" }),
    h("span", { class: "lane-activity" }),
    h("canvas", { class: "timeline", "aria-hidden": "true" }));
}

function showActivity(lane, rs, state, newHost) {
  const act = activity(rs, state);
  setAttributes(lane, { class: ["lane", `doing-${act.kind}`, state.event?.rank === rs.rank && "current", act.waiting && "waiting",
    newHost && "new-host"].filter(Boolean).join(" ") });
  morph(lane.querySelector(".lane-icon"), ICON[act.kind] || "·");
  morph(lane.querySelector(".lane-activity"), h("span", { class: "lane-text", title: act.text }, act.text),
    act.label ? h("span", { class: "lane-label" }, act.label) : null);
}

/**
 * The rank's spans between `t0` and `t1` across the lane, painted on a canvas: a run of thousands of
 * events has hundreds of spans a rank, and as SVG nodes each step restyled them all.
 */
function showTimeline(canvas, rs, state, t0, t1) {
  const width = sizeOf(canvas).width || 300;
  const height = 1.3 * remPx();
  const dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(height * dpr)) {
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const k = width / Math.max(t1 - t0, 1e-6);
  const y = (v) => (v / 24) * height;                  // the lane is 24 units high, as it was drawn before
  ctx.strokeStyle = "#cbd5e1";
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(0, y(12));
  ctx.lineTo(width, y(12));
  ctx.stroke();
  const colour = rankColour(rs.rank);
  ctx.fillStyle = colour;
  const open = [];
  for (const span of rs.spans) {
    const collective = span.kind !== "compute";
    const x = (span.t0 - t0) * k;
    const w = Math.max(((span.t1 ?? state.tNow) - span.t0) * k, MIN_SPAN_PX);
    const top = collective ? y(2) : y(7);
    const h_ = collective ? y(20) : y(10);
    ctx.globalAlpha = collective ? 0.9 : 0.35;
    ctx.fillRect(x, top, w, h_);
    if (span.t1 === null) open.push([x, top, w, h_]);
  }
  ctx.globalAlpha = 1;
  ctx.strokeStyle = "#0f172a";
  ctx.setLineDash([3, 2]);
  for (const [x, top, w, h_] of open) ctx.strokeRect(x, top, w, h_);
  ctx.setLineDash([]);
  const e = state.event;
  if (e && e.rank === rs.rank) {
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo((e.t - t0) * k, 0);
    ctx.lineTo((e.t - t0) * k, height);
    ctx.stroke();
  }
}

/** rank → the name of the host it ran on, from the log's `host` events (a torchrun job, a run on a Ray cluster). */
function hostsByRank(hosts) {
  const hostOf = new Map();
  for (const e of hosts?.values() || []) for (const rank of e.ranks) hostOf.set(rank, e.host);
  return hostOf;
}

/** `hosts`: the log's latest `host` event of each node; where there are some, lanes are grouped under their host's name. */
export function renderLanes(container, state, hosts) {
  if (!state.ranks.length) {
    fill(container, h("p", { class: "empty" }, document.body.dataset.role === "follower"
      ? "Waiting for the presenter to start a run: it appears here, live, as soon as it starts."
      : "Press ▶ Run to start the ranks. Then step through what they did: Space or → next event, ← back, Home/End, or ▶ Play."));
    return;
  }
  let t0 = Infinity;
  for (const rs of state.ranks) if (rs.spans.length) t0 = Math.min(t0, rs.spans[0].t0);   // spans are in time order
  if (t0 === Infinity) t0 = 0;
  const t1 = Math.max(state.tNow, t0 + 1e-3);
  const list = container.querySelector(":scope > ol.lanes") || fill(container, h("ol", { class: "lanes" })).firstChild;
  const cache = cacheOf(container);
  const hostOf = hostsByRank(hosts);
  let previousHost;
  place(list, state.ranks.map((rs) => {
    const lane = cache.get(`lane ${rs.rank}`, () => laneItem(rs.rank));
    const host = hostOf.get(rs.rank);
    showActivity(lane, rs, state, host !== undefined && host !== previousHost);
    setAttributes(lane, { "data-host": host });
    previousHost = host;
    showTimeline(lane.querySelector(".timeline"), rs, state, t0, t1);
    return lane;
  }));
  cache.done();
}
