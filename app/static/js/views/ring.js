/**
 * Point-to-point steps (ring all-reduce, recursive doubling, any send/recv): a row per rank with its
 * buffer's numbers cut into chunks, and, for the step at the cursor, an arrow per send from the
 * sending rank to its peer carrying the chunk. A chunk in flight moves along its arrow; a delivered
 * one is drawn solid and its place in the receiver is marked; a recv still waiting for its send is a
 * dashed arrow. Above, the steps seen so far, the current one marked; below, each algorithm's step
 * count when the lesson reports it.
 *
 * Steps come from the calls' labels ("reduce-scatter step 2: send chunk 3, …" → step
 * "reduce-scatter step 2", chunk 3); a call without a label is its own step "send/recv". A rank's
 * buffer is its latest snapshot named after the step's phase ("ring buffer after reduce-scatter
 * step 1"), else its input — the all-gather phase goes on from the reduce-scatter's buffer.
 */

import { cacheOf, changed, drawn, h, morph, place, remPx, s, setAttributes, showNote, sizeOf } from "paralab/dom.js";
import { afterColon, t, tPlural, tText } from "paralab/i18n.js";
import { rankColour } from "paralab/palette.js";
import { formatNumber } from "paralab/replay.js";
import { cellValue } from "paralab/views/heatmap.js";

/** Metrics this view shows (the numbers panel leaves them out). */
export const RING_METRICS = ["steps_ring", "steps_recursive_doubling"];

const CONTINUES = { "all-gather": "reduce-scatter" };   // a phase that works on the previous phase's buffer
const INPUT_NAMES = ["input", "before"];
const CYCLE_S = 1.8;
// A step of more transfers than this (a pipeline's sends carry no step label: one step of thousands)
// draws those still under way and the latest delivered, up to this many; the counts say how many in all.
export const MOST_ARROWS = 24;

/** "reduce-scatter step 2: send chunk 3, …" → {key: "reduce-scatter step 2", stem: "reduce-scatter", n: 2}. */
export function stepOf(label) {
  const m = /^(.*?)\bstep (\d+)/.exec(label || "");
  if (!m) return { key: label ? label.split(":")[0] : "send/recv", stem: label ? label.split(":")[0] : "send/recv", n: null };
  return { key: `${m[1]}step ${m[2]}`.trim(), stem: m[1].trim(), n: Number(m[2]) };
}

/** The chunk a send/recv moves: the event's `chunk`, else the one its label names ("send chunk 3"). */
function chunkOf(e, op) {
  if (Number.isInteger(e?.chunk)) return e.chunk;
  const text = e?.label || "";
  const m = op === "send" ? /(?:send|pass on finished|pass on) chunk (\d+)/.exec(text) : /(?:received|receive) chunk (\d+)/.exec(text);
  return m ? Number(m[1]) : null;
}

function snapshotNames(state) {
  const names = new Set();
  for (const list of state.snapshots.values()) for (const e of list) if (/ after /.test(e.name) || INPUT_NAMES.includes(e.name)) names.add(e.name);
  return names;
}

/** The tensor names this view draws (left out of the heatmap panel). */
export function ringNames(state) {
  return (state.p2p.length || gatedCalls(state).length) && !hasOrigins(state) ? [...snapshotNames(state)] : [];
}

/** Step mode: the send/recv calls ranks wait at a gate before (not begun yet). */
function gatedCalls(state) {
  return state.final ? [] : state.ranks.filter((rs) => rs.gate && rs.gate.call === "p2p").map((rs) => rs.gate);
}

function hasOrigins(state) {
  for (const byRank of state.loose.values()) for (const e of byRank.values()) if (Array.isArray(e.origin)) return true;
  return false;
}

function bufferOf(state, rank, stem) {
  const chain = [];
  for (let st = stem; st && !chain.includes(st); st = CONTINUES[st]) chain.push(st);
  const list = state.snapshots.get(rank) || [];
  for (let i = list.length - 1; i >= 0; i--) {
    if (/ after /.test(list[i].name) && chain.some((st) => list[i].name.split(" after ")[1]?.includes(st) || list[i].name.split(" after ")[0].includes(st))) return list[i];
  }
  return list.find((e) => INPUT_NAMES.includes(e.name)) || null;
}

function stepAtCursor(state, steps) {
  const e = state.event;
  if (e) {
    const named = e.kind === "p2p" || (e.kind === "gate" && e.call === "p2p") ? stepOf(e.label).key : e.kind === "compute" ? e.name : e.kind === "tensor" ? (e.name.split(" after ")[1] || null) : null;
    if (named && steps.some((st) => st.key === named)) return named;
  }
  // else: the step the rank of the event (or the furthest rank) is in
  const last = (e && e.rank !== null && e.rank !== undefined ? state.p2p.findLast((sp) => sp.rank === e.rank) : null) || state.p2p[state.p2p.length - 1];
  return last ? stepOf(last.label).key : null;
}

function show(v) {
  if (!Number.isFinite(v)) return formatNumber(v);
  return Number.isInteger(v) ? String(v) : formatNumber(Number(v.toFixed(2)));
}

export function renderRing(container, state, { runId, worldSize, contents }) {
  const gated = gatedCalls(state);
  if (hasOrigins(state)) {
    changed(container, "none");
    return false;
  }
  if (!state.p2p.length && !gated.length) {
    if (changed(container, "none")) showNote(container, h("p", { class: "empty" }, "No send/recv yet at this step."));
    return true;
  }
  const analysis = analysisOf(state, runId, gated);
  const { steps } = analysis;
  const current = stepAtCursor(state, steps);
  const step = steps.find((x) => x.key === current) || steps[steps.length - 1];
  const { detailOf, gatedHere, nSends, delivered, nWaiting, atGates, nAll, arrows } = transfersOf(analysis, state, step, gated);
  const rem = remPx();
  const width = Math.max(360, sizeOf(container).width || 640);
  const world = worldSize || state.ranks.length;
  const buffers = Array.from({ length: world }, (_, r) => bufferOf(state, r, step.stem));
  const key = [runId, rem, width, steps.length, step.key, nAll, delivered, nWaiting,
    ...arrows.map((a) => `${a.send?.seq}>${a.recv?.seq}:${a.status}`), ...gatedHere.map((g) => g.seq), ...buffers.map((b) => b?.seq),
    state.metrics.get("steps_ring")?.seq, state.metrics.get("steps_recursive_doubling")?.seq, state.event?.rank].join(",");
  if (!changed(container, key)) return true;
  drawn(container);

  const values = buffers.map((b) => (b?.tensor?.preview || []).flat().map(cellValue));
  const n = Math.max(1, ...values.map((v) => v.length));
  const chunked = arrows.some((a) => a.chunk !== null);
  const chunks = chunked && n % world === 0 ? world : 1;
  const per = n / chunks;
  const labelW = 5.2 * rem;
  const gap = chunks > 1 ? 0.5 * rem : 0;
  const arcs = arrows.filter((a) => !(a.chunk !== null && a.to === a.from + 1) && a.from !== null && a.from !== undefined)
    .sort((a, b) => Math.min(a.from, a.to) - Math.min(b.from, b.to) || a.from - b.from);
  const lanes = Math.min(arcs.length, 8);
  const arcRoom = 2.2 * rem + lanes * 0.8 * rem;
  const none = values.every((v) => !v.length);            // no buffers at all (e.g. the deadlock lab): one box per rank
  const cell = none ? 9 * rem : Math.max(1.4 * rem, Math.min(2.8 * rem, (width - labelW - arcRoom - gap * (chunks - 1)) / n));
  const rowH = 1.9 * rem;
  const rowGap = 2.6 * rem;
  const top = 1.6 * rem;
  const gridRight = labelW + n * cell + gap * (chunks - 1);
  const height = top + world * rowH + (world - 1) * rowGap + 0.8 * rem;
  const svgW = Math.min(width, gridRight + arcRoom);
  const rowY = (r) => top + r * (rowH + rowGap);
  const cellX = (i) => labelW + i * cell + Math.floor(i / per) * gap;
  const chunkCx = (c) => cellX(c * per) + (per * cell) / 2;

  const cache = cacheOf(container);
  const leaf = (tag, attrs, text) => cache.get(tag + JSON.stringify(attrs) + (text ?? ""), () => s(tag, attrs, text));
  const svg = setAttributes(cache.get("svg", () => s("svg", {})), { class: "ring-svg", viewBox: `0 0 ${svgW} ${height}`, width: svgW, height, role: "img",
    "aria-label": t("{step}: {n} transfers between {world} ranks", { step: step.key, n: arrows.length, world }), style: `font-size: ${0.8 * rem}px` });
  const parts = [cache.get(`defs ${world}`, () => arrowHeads(world))];
  if (chunks > 1) {
    for (let c = 0; c < chunks; c++) parts.push(leaf("text", { x: chunkCx(c), y: 0.9 * rem, "text-anchor": "middle", class: "chunk-label" }, t("chunk {n}", { n: c })));
  }
  const marks = new Map();   // "rank:chunk" → "out" | "in" | "in-done"
  for (const a of arrows) {
    if (a.chunk === null) continue;
    if (a.status === "gated") continue;
    if (a.status !== "waiting") marks.set(`${a.from}:${a.chunk}`, "out");
    const into = a.recv ? chunkOf(a.recv.label, "recv") ?? a.chunk : a.chunk;
    marks.set(`${a.to}:${into}`, a.status === "delivered" ? "in-done" : "in");
  }
  for (let r = 0; r < world; r++) {
    const y = rowY(r);
    parts.push(leaf("text", { x: 0.2 * rem, y: y + rowH / 2, "dominant-baseline": "central", class: "ring-rank", fill: rankColour(r) }, `rank ${r}`));
    const vals = values[r];
    if (!vals.length) {
      parts.push(leaf("rect", { x: labelW, y, width: n * cell - 2, height: rowH, rx: 3, class: "ring-cell empty" }),
        leaf("text", { x: labelW + 0.5 * rem, y: y + rowH / 2, "dominant-baseline": "central", class: "not-yet" },
          none ? "its tensor (not shown)" : "no buffer shown yet"));
      continue;
    }
    vals.forEach((v, i) => {
      parts.push(leaf("rect", { x: cellX(i), y, width: cell - 2, height: rowH, rx: 3, class: "ring-cell" }),
        leaf("text", { x: cellX(i) + (cell - 2) / 2, y: y + rowH / 2, "text-anchor": "middle", "dominant-baseline": "central", class: "ring-value" }, show(v)));
    });
    for (let c = 0; c < chunks; c++) {
      const mark = marks.get(`${r}:${c}`);
      if (!mark) continue;
      const a = arrows.find((x) => (mark === "out" ? x.from === r && x.chunk === c : x.to === r));
      const colour = rankColour(a ? a.from : r);
      parts.push(leaf("rect", { x: cellX(c * per) - 2, y: y - 2, width: per * cell + 2, height: rowH + 4, rx: 4, fill: "none", stroke: colour,
                                "stroke-width": 3, "stroke-dasharray": mark === "in" ? "5 4" : null, class: ["chunk-mark", mark] }));
    }
    const tag = bufferTag(buffers[r]?.name);
    if (tag) parts.push(leaf("text", { x: labelW, y: y + rowH + 0.75 * rem, class: "buffer-tag" }, tag));
  }
  const tagged = arrows.some((a) => (a.send?.tag || a.recv?.tag || 0) !== 0);
  const reduceMotion = window.matchMedia?.("(prefers-reduced-motion: reduce)").matches;
  // arrows: to the next row straight down from the chunk; otherwise an arc on the right
  arrows.forEach((a, idx) => {
    if (a.from === null || a.from === undefined || a.to === null || a.to === undefined) return;
    const colour = rankColour(a.from);
    let d;
    if (a.chunk !== null && a.to === a.from + 1) {
      const x = chunkCx(a.chunk);
      d = `M${x},${rowY(a.from) + rowH + 2} L${x},${rowY(a.to) - 4}`;
    } else {
      const y0 = rowY(a.from) + rowH / 2;
      const y1 = rowY(a.to) + rowH / 2;
      const lane = Math.min(arcs.indexOf(a), 7);
      const reach = 1.3 * rem + lane * 0.8 * rem;
      const x0 = gridRight + 0.3 * rem;
      d = `M${x0},${y0 + (a.from < a.to ? 0.25 : -0.25) * rem} C${x0 + reach},${y0} ${x0 + reach},${y1} ${x0 + 0.2 * rem},${y1 + (a.from < a.to ? -0.25 : 0.25) * rem}`;
    }
    parts.push(leaf("path", { d, fill: "none", stroke: a.status === "waiting" ? "#94a3b8" : colour, "stroke-width": a.status === "delivered" ? 3 : 2.2,
                              "stroke-dasharray": a.status === "waiting" ? "4 4" : a.status === "flying" ? "7 5" : a.status === "gated" ? "2 5" : null,
                              "stroke-opacity": a.status === "gated" ? 0.5 : null,
                              "marker-end": `url(#ring-head-${a.status === "waiting" ? "grey" : a.from})`, class: ["ring-arrow", a.status], "data-from": a.from, "data-to": a.to }));
    if (a.status === "flying" && !reduceMotion) {
      const label = a.chunk !== null ? `c${a.chunk}` : tagged ? `tag ${a.send.tag}` : "all";
      parts.push(cache.get(`packet${JSON.stringify([d, colour, label, idx, rem])}`, () => packet(d, colour, label, idx, rem)));
    } else if (a.status === "delivered" && a.chunk !== null) {
      const mid = midpoint(d);
      parts.push(leaf("text", { x: mid[0] + 0.5 * rem, y: mid[1], "dominant-baseline": "central", class: "arrow-label", fill: colour },
        `c${a.chunk}${receivedValues(a.recv)}`));
    } else if (a.status === "waiting") {
      const mid = midpoint(d);
      parts.push(leaf("text", { x: mid[0] + 1.6 * rem, y: mid[1], "dominant-baseline": "central", class: "arrow-label waiting" },
        t(tagged ? "rank {rank}'s recv waits (tag {tag})" : "rank {rank}'s recv waits", { rank: a.to, tag: a.recv.tag })));
    }
  });
  place(svg, parts);

  const { detail, detailRank } = detailOf(state.event?.rank ?? 0);
  const ringSteps = state.metrics.get("steps_ring");
  const doubling = state.metrics.get("steps_recursive_doubling");
  const index = steps.indexOf(step);
  place(container, [
    morph(cache.get("strip", () => h("ol", { class: "step-strip", "aria-label": "steps so far" })), steps.map((st, i) =>
      h("li", { class: ["step-chip", st.key === step.key && "current", i < index && "past"], "aria-current": st.key === step.key ? "step" : null }, st.key))),
    morph(cache.get("head", () => h("p", { class: "ring-head" })),
      h("strong", {}, step.key), algorithmStep(step, state, contents),
      detail.includes(":") ? h("span", { class: "ring-detail" }, h("br"), t("rank {rank}: {detail}", { rank: detailRank, detail: afterColon(tText(detail)) })) : null),
    place(cache.get("drawing", () => h("div", { class: "ring-drawing" })), [svg]),
    morph(cache.get("status", () => h("p", { class: "ring-status" })), t("{delivered} of {n} sends delivered in this step", { delivered, n: nSends }),
      nWaiting ? ` · ${tPlural(nWaiting, "{n} recv waiting for a send", "{n} recvs waiting for a send")}` : "",
      atGates.length ? ` · ${tPlural(atGates.length, "{n} send held at a gate (dotted)", "{n} sends held at a gate (dotted)")}` : "",
      ` · ${t("dashed outline: the chunk being received, solid: the chunk sent")}`,
      arrows.length < nAll ? ` · ${t("drawn: the {n} latest (the chart above has them all)", { n: arrows.length })}` : ""),
    ringSteps || doubling ? cache.get(JSON.stringify(["steps", ringSteps, doubling]), () => stepsTable(ringSteps, doubling)) : null,
  ].filter(Boolean));
  cache.done();
  return true;
}

// What the send/recv calls at a state make — the steps, and each step's transfers paired — kept for the
// latest few states by what decides it: the run, the last event that began or ended a send/recv
// (`state.p2pSeq`: until the next one, the calls are the same) and the gates. A step over a compute event,
// or back to a place seen before (End after Home), pairs nothing again.
const analyses = new Map();      // key → {calls, steps, byStep: Map step key → its transfers}
const KEPT_ANALYSES = 4;

function analysisOf(state, runId, gated) {
  const key = state.p2pSeq === undefined ? null : `${runId}|${state.p2pSeq}|${gated.map((g) => g.seq).join(",")}`;
  const kept = key !== null && analyses.get(key);
  if (kept) {
    analyses.delete(key);            // the most recently used last
    analyses.set(key, kept);
    return kept;
  }
  const calls = callsOf(state, runId);
  const seen = state.p2p.length;
  const steps = calls.order.filter((st) => calls.byStep.get(st.key).ats[0] < seen);
  for (const g of gated) {
    const st = stepOfLabel(g.label);
    if (!steps.some((x) => x.key === st.key)) steps.push(st);
  }
  const made = { calls, steps, byStep: new Map() };
  if (key === null) return made;
  analyses.set(key, made);
  if (analyses.size > KEPT_ANALYSES) analyses.delete(analyses.keys().next().value);
  return made;
}

const stepsByLabel = new Map();
function stepOfLabel(label) {
  let st = stepsByLabel.get(label);
  if (!st) {
    if (stepsByLabel.size > 10_000) stepsByLabel.clear();
    st = stepOf(label);
    stepsByLabel.set(label, st);
  }
  return st;
}

// ---- a run's send/recv calls by step, and each send's recv, kept as the calls are seen ----------------
// A state's calls are the first N of the run's (state.p2p holds them in the order they began), and the
// pairing is the same for every N: a send takes the first recv of its queue not taken by an earlier send,
// and a recv that begins later comes later in its queue. So the pairs made for the most calls seen serve any
// state before, and a state further on pairs only its new calls: a pipeline's or a program's thousands of
// sends are one step, and pairing them all again took most of a move's time on a big run. A step with a
// recv from any rank (its queue depends on who sent first) is paired at each state instead (pairUp).
let runCalls = null;

function callsOf(state, runId) {
  const seen = state.p2p.length;
  const known = runCalls && runCalls.runId === runId ? Math.min(seen, runCalls.seqs.length) : 0;
  if (!runCalls || runCalls.runId !== runId || (known && state.p2p[known - 1].seq !== runCalls.seqs[known - 1])) {
    runCalls = { runId, seqs: [], order: [], byStep: new Map() };
  }
  const calls = runCalls;
  const before = calls.seqs.length;
  for (let at = before; at < seen; at++) {
    const sp = state.p2p[at];
    calls.seqs.push(sp.seq);
    const st = stepOfLabel(sp.label);
    let step = calls.byStep.get(st.key);
    if (!step) {
      step = { ats: [], sendAts: [], recvAts: [], recvOf: new Map(), sendOf: new Map(), queues: new Map(), unmatched: [], anySource: false,
               firstLabelled: Infinity };
      calls.byStep.set(st.key, step);
      calls.order.push(st);
    }
    step.ats.push(at);
    if (sp.label && step.firstLabelled === Infinity) step.firstLabelled = at;
    if (sp.op === "send") {
      step.sendAts.push(at);
      step.unmatched.push([at, `${sp.peer}<${sp.rank}:${sp.tag}`]);   // the queue of recvs it can go to
      continue;
    }
    const peer = sp.begin ? sp.begin.peer : sp.peer;
    if (peer === null || peer === undefined) step.anySource = true;
    step.recvAts.push(at);
    const key = `${sp.rank}<${peer}:${sp.tag}`;
    if (!step.queues.has(key)) step.queues.set(key, { recvs: [], next: 0 });
    step.queues.get(key).recvs.push(at);
  }
  if (seen > before) for (const step of calls.byStep.values()) if (step.unmatched.length && !step.anySource) matchSends(step);
  return calls;
}

/** Give the step's sends still without a recv, in order, the first recv of their queue not taken. */
function matchSends(step) {
  step.unmatched = step.unmatched.filter(([sendAt, queue]) => {
    const q = step.queues.get(queue);
    while (q && q.next < q.recvs.length && step.sendOf.has(q.recvs[q.next])) q.next += 1;
    if (!q || q.next >= q.recvs.length) return true;
    const recvAt = q.recvs[q.next];
    step.recvOf.set(sendAt, recvAt);
    step.sendOf.set(recvAt, sendAt);
    return false;
  });
}

/** How many of the ascending numbers `ats` are below `n`. */
function countBelow(ats, n) {
  let lo = 0;
  let hi = ats.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ats[mid] < n) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The step's transfers at `state`, counted, and the arrows to draw (each with its chunk); `detailOf(rank)`: the
 *  label of the step's first call of `rank` that has one (else of any rank), and whose it is. */
function transfersOf(analysis, state, step, gated) {
  const kept = analysis.byStep.get(step.key);
  if (kept) return kept;
  const calls = analysis.calls.byStep.get(step.key);
  const seen = calls ? countBelow(calls.ats, state.p2p.length) : 0;
  const gatedHere = gated.filter((g) => stepOfLabel(g.label).key === step.key);
  const atGates = gatedHere.filter((g) => g.op === "send")
    .map((g) => ({ from: g.rank, to: g.peer, chunk: chunkOf(g, "send"), status: "gated" }));
  const counted = !calls ? countedTransfers([], [], atGates)
    : calls.anySource ? pairUp(calls.ats.slice(0, seen).map((at) => state.p2p[at]), atGates) : pairsAt(calls, state, atGates);
  for (const a of counted.arrows) if (!("chunk" in a)) a.chunk = a.send ? chunkOf(a.send.begin || a.send, "send") : chunkOf(a.recv.begin || a.recv, "recv");
  const p2p = state.p2p;
  const detailOf = (rank) => {
    let any = null;
    for (let i = calls && calls.firstLabelled < p2p.length ? 0 : seen; i < seen; i++) {   // most steps: none labelled
      const sp = p2p[calls.ats[i]];
      if (!sp.label) continue;
      if (sp.rank === rank) return { detail: sp.label, detailRank: sp.rank };
      any ??= sp;
    }
    return { detail: any?.label || "", detailRank: any?.rank };
  };
  const made = { detailOf, gatedHere, atGates, ...counted };
  analysis.byStep.set(step.key, made);
  return made;
}

/** The step's transfers at `state` — the pairs kept in `calls` cut to the state's calls — in one pass over them,
 *  making only the arrows drawn: a pipeline's or a program's step of thousands draws 24 (`drawnArrows`). */
function pairsAt(calls, state, atGates) {
  const seen = state.p2p.length;
  const picked = pickArrows();
  for (let i = 0; i < calls.sendAts.length && calls.sendAts[i] < seen; i++) {
    const send = state.p2p[calls.sendAts[i]];
    const recvAt = calls.recvOf.get(calls.sendAts[i]);
    const recv = recvAt !== undefined && recvAt < seen ? state.p2p[recvAt] : undefined;
    picked.send(send, recv);
  }
  for (let i = 0; i < calls.recvAts.length && calls.recvAts[i] < seen; i++) {
    const sendAt = calls.sendOf.get(calls.recvAts[i]);
    if (sendAt === undefined || sendAt >= seen) picked.waiting(state.p2p[calls.recvAts[i]]);
  }
  return picked.done(atGates);
}

/**
 * Counts a step's transfers as they are given — its sends in order, then the recvs no send answers — and keeps
 * the arrows to draw: all of them while they are at most `MOST_ARROWS`, else those still under way (the last
 * `MOST_ARROWS`) and, in the room left, the latest delivered; in the order given, the sends held at a gate last.
 * `done(atGates)` → {nSends, delivered, nWaiting, nAll, arrows}. Nothing is made for a transfer not drawn.
 */
function pickArrows() {
  let nSends = 0;
  let nWaiting = 0;
  const open = [];        // [place in the order given, arrow]: the sends not delivered, then the waiting recvs
  // [place, send, recv, its last event's seq]: the latest delivered, at most MOST_ARROWS, by that seq (of two alike, the
  // one given first after). A step's sends come mostly in the order they were delivered: each goes at the end.
  const latest = [];
  return {
    send(send, recv) {
      const at = nSends++;
      if (!recv?.end) {
        open.push([at, { from: send.rank, to: send.peer, status: "flying", send, recv }]);
        return;
      }
      const seq = Math.max(send.end?.seq ?? send.seq, recv.end.seq);
      if (latest.length === MOST_ARROWS && seq <= latest[0][3]) return;
      let i = latest.length;
      while (i > 0 && latest[i - 1][3] >= seq) i -= 1;
      latest.splice(i, 0, [at, send, recv, seq]);
      if (latest.length > MOST_ARROWS) latest.shift();
    },
    waiting(recv) {         // after every send
      open.push([nSends + nWaiting++, { from: recv.peer, to: recv.rank, status: "waiting", recv }]);
    },
    done(atGates) {
      open.push(...atGates.map((a, k) => [nSends + nWaiting + k, a]));
      const nAll = nSends + nWaiting + atGates.length;
      const room = nAll > MOST_ARROWS ? Math.max(0, MOST_ARROWS - open.length) : latest.length;
      const delivered = latest.slice(latest.length - room)
        .map(([at, send, recv]) => [at, { from: send.rank, to: send.peer, status: "delivered", send, recv }]);
      const kept = [...open.slice(-MOST_ARROWS), ...delivered].sort((x, y) => x[0] - y[0]);
      const flying = open.length - nWaiting - atGates.length;
      return { nSends, delivered: nSends - flying, nWaiting, nAll, arrows: kept.map(([, a]) => a) };
    },
  };
}

/** The transfers counted from whole lists (a step paired at each state: `pairUp`). */
function countedTransfers(sends, waitingRecvs, atGates) {
  const picked = pickArrows();
  for (const a of sends) picked.send(a.send, a.recv);
  for (const a of waitingRecvs) picked.waiting(a.recv);
  return picked.done(atGates);
}

/**
 * This step's sends, each with the recv that took it — the first recv from its rank with its tag not
 * taken by an earlier send (a recv from any rank takes whoever comes first) — and the recvs no send
 * of the step answers yet. One pass over the step's calls, however many.
 */
function pairUp(spans, atGates) {
  const queues = new Map();    // "rank<peer:tag" (peer "*": from any rank) → that rank's recvs, in order, and how many are taken
  const queue = (key) => queues.get(key) || queues.set(key, { recvs: [], next: 0 }).get(key);
  for (const r of spans) {
    if (r.op === "recv") queue(`${r.rank}<${r.peer ?? "*"}:${r.tag}`).recvs.push(r);
  }
  const taken = new Set();
  const firstFree = (q) => {
    while (q && q.next < q.recvs.length && taken.has(q.recvs[q.next])) q.next += 1;
    return q?.recvs[q.next];
  };
  const sends = spans.filter((sp) => sp.op === "send").map((send) => {
    const named = firstFree(queues.get(`${send.peer}<${send.rank}:${send.tag}`));
    const anyone = firstFree(queues.get(`${send.peer}<*:${send.tag}`));
    const recv = named && anyone ? (named.seq < anyone.seq ? named : anyone) : named || anyone;
    if (recv) taken.add(recv);
    return { from: send.rank, to: send.peer, status: recv?.end ? "delivered" : "flying", send, recv };
  });
  const waitingRecvs = spans.filter((r) => r.op === "recv" && !taken.has(r))
    .map((r) => ({ from: r.peer, to: r.rank, status: "waiting", recv: r }));
  return countedTransfers(sends, waitingRecvs, atGates);
}

/** ": 3 · 5", the values a finished recv got (its end's preview), or "" before it ends or without one. */
function receivedValues(recv, most = 4) {
  const values = (recv?.end?.tensors?.[0]?.preview || []).flat().map(cellValue);
  if (!values.length) return "";
  return `: ${values.slice(0, most).map(show).join(" · ")}${values.length > most ? " …" : ""}`;
}

/** A chunk moving along its arrow, again and again (each arrow's a little later than the one before). */
function packet(d, colour, label, idx, rem) {
  return s("g", { class: "ring-packet" },
    s("rect", { x: -1.1 * rem, y: -0.5 * rem, width: 2.2 * rem, height: 1 * rem, rx: 3, fill: colour }),
    s("text", { x: 0, y: 0, "text-anchor": "middle", "dominant-baseline": "central", class: "packet-label" }, label),
    s("animateMotion", { dur: `${CYCLE_S}s`, repeatCount: "indefinite", path: d, begin: `${(idx * 0.15).toFixed(2)}s` }));
}

function arrowHeads(world) {
  const defs = s("defs", {});
  for (let r = 0; r < world; r++) defs.append(arrowHead(`ring-head-${r}`, rankColour(r)));
  defs.append(arrowHead("ring-head-grey", "#94a3b8"));
  return defs;
}

/** The algorithms' step counts the lesson reports: ring 2(p−1), recursive doubling log₂p. */
function stepsTable(ringSteps, doubling) {
  return h("table", { class: "steps-table" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "algorithm"), h("th", { scope: "col", class: "num" }, "steps"),
      h("th", { scope: "col" }, "formula"), h("th", { scope: "col", class: "num" }, "elements each rank sends"))),
    h("tbody", {},
      ringSteps ? h("tr", {}, h("td", {}, "ring (reduce-scatter + all-gather)"), h("td", { class: "num" }, String(ringSteps.value)),
        h("td", {}, h("code", {}, ringSteps.formula || "2(p−1)")), h("td", { class: "num" }, String(ringSteps.elements_sent ?? "–"))) : null,
      doubling ? h("tr", {}, h("td", {}, "recursive doubling"), h("td", { class: "num" }, String(doubling.value)),
        h("td", {}, h("code", {}, doubling.formula || "log₂p")), h("td", { class: "num" }, String(doubling.elements_sent ?? "–"))) : null));
}

/**
 * " — ring step 4 of 2(p−1) = 6" for the ring's phases, " — step 1 of log₂p = 2" for recursive doubling:
 * the step counts and their formulas as the lesson reports them (`steps_ring`, `steps_recursive_doubling`),
 * counted when the steps are done: from anywhere in the log, so a recorded run says it at every step.
 */
function algorithmStep(step, state, contents) {
  if (!step.n) return "";
  const reported = (name) => state.metrics.get(name) ?? contents?.reported?.get(name);
  const ring = reported("steps_ring");
  if (ring && (step.stem === "reduce-scatter" || step.stem === "all-gather")) {
    const k = step.stem === "reduce-scatter" ? step.n : ring.value / 2 + step.n;   // the all-gather's steps follow the reduce-scatter's half
    return ` ${t("— ring step {k} of {formula} = {total}", { k, formula: ring.formula, total: ring.value })}`;
  }
  const doubling = reported("steps_recursive_doubling");
  if (doubling && step.stem === "doubling") return ` ${t("— step {k} of {formula} = {total}", { k: step.n, formula: doubling.formula, total: doubling.value })}`;
  return "";
}

/** "after reduce-scatter step 2" under a rank's buffer, from its tensor's name ("buffer after …"). */
function bufferTag(name) {
  const step = name ? / after (.+)$/.exec(name) : null;
  return step ? t("after {step}", { step: step[1] }) : name || "";
}

function arrowHead(id, colour) {
  return s("marker", { id, viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 5, markerHeight: 5, orient: "auto-start-reverse" },
    s("path", { d: "M0,0 L10,5 L0,10 z", fill: colour }));
}

function midpoint(d) {
  const nums = d.match(/-?\d+(\.\d+)?/g).map(Number);
  const [x0, y0] = nums.slice(0, 2);
  const [x1, y1] = nums.slice(-2);
  return [(x0 + x1) / 2, (y0 + y1) / 2];
}
