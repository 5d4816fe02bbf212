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
  ctx.fillStyle = rankColour(rs.rank);
  // A rank of a long run has a thousand spans, most narrower than a pixel or two here: a stretch of spans of
  // one kind that meet or overlap on the canvas is painted as one block — computations only where
  // one is not nested in the last (painted at 0.35, a nested one shows darker); calls, at 0.9, overlapping
  // too. Both kinds are painted in one colour, so the order of the blocks does not change the picture.
  const stretches = { collective: null, compute: null };
  const paint = (stretch, collective) => {
    if (!stretch) return;
    ctx.globalAlpha = collective ? 0.9 : 0.35;
    ctx.fillRect(stretch.x, collective ? y(2) : y(7), stretch.right - stretch.x, collective ? y(20) : y(10));
  };
  const open = [];
  for (const span of rs.spans) {
    const collective = span.kind !== "compute";
    const kind = collective ? "collective" : "compute";
    const x = (span.t0 - t0) * k;
    const end = span.t1 ?? state.tNow;
    const w = Math.max((end - span.t0) * k, MIN_SPAN_PX);
    const stretch = stretches[kind];
    if (stretch && x <= stretch.right && (collective || span.t0 >= stretch.tEnd)) {
      stretch.right = Math.max(stretch.right, x + w);
      stretch.tEnd = Math.max(stretch.tEnd, end);
    } else {
      paint(stretch, collective);
      stretches[kind] = { x, right: x + w, tEnd: end };
    }
    if (span.t1 === null) open.push(collective ? [x, y(2), w, y(20)] : [x, y(7), w, y(10)]);
  }
  paint(stretches.collective, true);
  paint(stretches.compute, false);
  ctx.globalAlpha = 1;
  ctx.strokeStyle = "#0f172a";
  ctx.setLineDash([3, 2]);
  outlineOpen(ctx, open);
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

/**
 * The spans still open, dashed: they all reach the cursor's time (the right edge), so each kind's are one box
 * from the earliest one's start, with a dashed left edge where each other one starts. A pipeline's rank has
 * a hundred sends and recvs posted ahead at a time: their boxes' long edges, drawn one over the other, were
 * most of a lane's painting.
 */
function outlineOpen(ctx, open) {
  const byTop = new Map();
  for (const box of open) {
    if (!byTop.has(box[1])) byTop.set(box[1], []);
    byTop.get(box[1]).push(box);
  }
  for (const [top, boxes] of byTop) {
    boxes.sort((a, b) => a[0] - b[0]);
    const [x0, , , height] = boxes[0];
    const right = Math.max(...boxes.map(([x, , w]) => x + w));
    ctx.strokeRect(x0, top, right - x0, height);
    ctx.beginPath();
    let last = x0;
    for (const [x] of boxes) {
      if (x - last < 1) continue;
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      last = x;
    }
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
