/**
 * The collective at the cursor, drawn as data moving between ranks (layout from collective-layout.js;
 * a small one by its numbers, collective-values.js).
 * While some ranks have not arrived, the others wait; once all have, the data moves (looping, so a
 * lecturer can talk over it); ranks that have finished show their outputs. Derived from the log only.
 */

import { changed, drawn, fill, fillKept, h, remPx, s, showNote, sizeOf } from "paralab/dom.js";
import { rankColour, SUM_COLOUR } from "paralab/palette.js";
import { t } from "paralab/i18n.js";
import { formatBytes, parseSite, rankList } from "paralab/replay.js";
import { gridImage, sharedLimit } from "paralab/views/heatmap.js";
import { layoutCollective, OP_STORY, phaseOf } from "paralab/views/collective-layout.js";
import { drawValues, valuePlan } from "paralab/views/collective-values.js";

const CYCLE_S = 2.6;
const TIMING = {   // when in each cycle a packet travels (keyTimes/keyPoints of animateMotion)
  in: { keyTimes: "0;0.45;1", keyPoints: "0;1;1", opacity: "1;1;0;0", opacityTimes: "0;0.45;0.5;1" },
  out: { keyTimes: "0;0.5;0.95;1", keyPoints: "0;0;1;1", opacity: "0;0;1;1;0", opacityTimes: "0;0.49;0.5;0.95;1" },
  direct: { keyTimes: "0;0.8;1", keyPoints: "0;1;1", opacity: "1;1;0;0", opacityTimes: "0;0.8;0.85;1" },
};

function phaseSentence(layout, c) {
  const { phase } = layout;
  if (phase.name === "waiting") {
    const missing = c.ranks.filter((r) => !c.begins.has(r));
    if (phase.finished.length) {   // a broadcast's or scatter's root, a reduce's or gather's giver: it only sends
      return t("{arrived} arrived; {missing} not yet. {left} already left: a rank that only gives its data need not wait for the others.",
        { arrived: rankList(phase.arrived), missing: rankList(missing), left: rankList(phase.finished) });
    }
    return t("Waiting: {arrived} arrived; {missing} not yet — a collective starts only when every member calls it.",
      { arrived: rankList(phase.arrived), missing: rankList(missing) });
  }
  if (phase.name === "moving") {
    const done = phase.finished.length ? ` ${t("Finished: {ranks}.", { ranks: rankList(phase.finished) })}` : "";
    return t("Every rank arrived: {story}.", { story: t(OP_STORY[c.op] || "data moves between the ranks") }) + done;
  }
  return t("Done: {story}.", { story: t(OP_STORY[c.op] || "the collective completed") });
}

function block(b, limit, rem) {
  const g = s("g", { class: ["block", b.kind, b.present ? "present" : "ghost"], "data-rank": b.rank });
  if (b.present && b.tensors.length) {
    const parts = b.tensors.length > 1 ? b.tensors : [b.tensors[0]];
    const ph = b.h / parts.length;
    parts.forEach((t, j) => {
      const href = gridImage(t, limit);
      if (href) g.append(s("image", { href, x: b.x, y: b.y + j * ph, width: b.w, height: ph, preserveAspectRatio: "none",
                                     style: "image-rendering: pixelated" }));
      else g.append(s("rect", { x: b.x, y: b.y + j * ph, width: b.w, height: ph, fill: "#cbd5e1" }));
    });
  } else {
    g.append(s("rect", { x: b.x, y: b.y, width: b.w, height: b.h, class: "ghost-fill" }));
  }
  if (b.stripes) {
    const sh = b.h / b.stripes.length;
    for (const stripe of b.stripes) {
      g.append(s("rect", { x: b.x + 2, y: b.y + stripe.index * sh + Math.min(2, sh / 4), width: b.w - 4, height: Math.max(1, sh - Math.min(4, sh / 2)),
                           fill: "none", stroke: stripe.colour, "stroke-width": 2.5, class: "stripe" }));
    }
  }
  g.append(s("rect", { x: b.x, y: b.y, width: b.w, height: b.h, fill: "none", stroke: b.outline,
                       "stroke-width": b.present ? 3.5 : 2, "stroke-dasharray": b.present ? null : "6 5", rx: 3 }));
  if (b.caption && b.kind === "out") {
    g.append(s("text", { x: b.x + b.w / 2, y: b.y + b.h + 1.1 * rem, "text-anchor": "middle", class: "block-caption" }, b.caption));
  }
  return g;
}

function packet(flow, layout, reduceMotion) {
  if (reduceMotion) return null;
  const t = TIMING[flow.stage];
  const { w, h: ph } = layout.packet;
  return s("rect", { x: -w / 2, y: -ph / 2, width: w, height: ph, rx: 2, fill: flow.colour, class: "packet",
                     stroke: "white", "stroke-width": 1 },
    s("animateMotion", { dur: `${CYCLE_S}s`, repeatCount: "indefinite", path: flow.d, calcMode: "linear",
                         keyTimes: t.keyTimes, keyPoints: t.keyPoints }),
    s("animate", { attributeName: "opacity", dur: `${CYCLE_S}s`, repeatCount: "indefinite",
                   values: t.opacity, keyTimes: t.opacityTimes }));
}

export function drawCollective(layout, c, rem) {
  const reduceMotion = window.matchMedia?.("(prefers-reduced-motion: reduce)").matches;
  const tensors = [...c.begins.values(), ...c.ends.values()].flatMap((e) => e.tensors || []);
  const limit = sharedLimit(tensors);
  const moving = layout.phase.name === "moving";
  const svg = s("svg", {
    class: ["collective-svg", `op-${layout.op}`, `phase-${layout.phase.name}`],
    viewBox: `0 0 ${layout.width} ${layout.height}`, width: layout.width, height: layout.height,
    role: "img", "aria-label": t("{op} among ranks {ranks}: {phase}", { op: c.op, ranks: c.ranks.join(", "), phase: t(layout.phase.name) }),
    style: `font-size: ${0.8 * rem}px`,
  });
  for (const col of layout.columns) {
    svg.append(s("text", { x: col.cx, y: 0.95 * rem, "text-anchor": "middle", class: "col-rank", fill: col.colour }, `rank ${col.rank}`));
    svg.append(s("text", { x: col.cx, y: 1.95 * rem, "text-anchor": "middle", class: ["col-state", col.state.replace(/ /g, "-")] }, col.state));
  }
  for (const flow of layout.flows) {
    const live = moving && !flow.done;
    svg.append(s("path", { d: flow.d, fill: "none", stroke: flow.colour, class: ["flow", flow.stage, live ? "live" : flow.done ? "arrived" : "idle"],
                           "stroke-width": live ? 2.5 : 1.5, "stroke-opacity": layout.phase.name === "waiting" ? 0.15 : live ? 0.55 : 0.3 }));
  }
  for (const b of layout.blocks) svg.append(block(b, limit, rem));
  for (const hub of layout.hubs) {
    svg.append(s("g", { class: "hub" },
      s("circle", { cx: hub.x, cy: hub.y, r: hub.r, fill: "white", stroke: hub.rank !== undefined ? rankColour(hub.rank) : SUM_COLOUR, "stroke-width": 2.5 }),
      s("text", { x: hub.x, y: hub.y, "text-anchor": "middle", "dominant-baseline": "central", class: "hub-label" }, hub.label)));
  }
  if (moving) for (const flow of layout.flows) if (!flow.done) svg.append(packet(flow, layout, reduceMotion));
  return svg;
}

/** `runId`: a drawing of this run's collective at the same point (its members' begins and ends) is kept and put back. */
export function renderCollective(container, state, runId = null) {
  const c = state.current;
  const rem = remPx();
  const width = Math.max(320, sizeOf(container).width || 640);
  const key = c ? [runId, c.key, c.begins.size, c.ends.size, width, rem, state.event?.kind === "collective"].join("|") : "none";
  if (!changed(container, key)) return;
  if (!c) {
    showNote(container, h("p", { class: "empty" }, "No collective yet at this step. Step forward (→) to reach one."));
    return;
  }
  drawn(container);
  if (runId === null) fill(container, ...drawing(c, state, width, rem));
  else fillKept(container, key, () => drawing(c, state, width, rem));
}

/** The collective's head, its phase in words and its picture. */
function drawing(c, state, width, rem) {
  const plan = valuePlan(c, { width, rem });     // small enough to draw by its numbers
  const layout = plan ? { phase: phaseOf(c) } : layoutCollective(c, { width, rem });
  const picture = plan ? drawValues(plan, c, layout.phase, { width, rem }) : drawCollective(layout, c, rem);
  const site = parseSite(c.site);
  const bytes = c.begins.get(c.ranks[0])?.bytes ?? c.bytes;
  return [
    h("div", { class: ["collective-head", state.event?.kind === "collective" ? "at-cursor" : "earlier"] },
      h("span", { class: `op-badge op-${c.op}` }, c.op.replace(/_/g, "-")),
      h("span", { class: "collective-label" }, c.label || ""),
      h("span", { class: "collective-meta" },
        t("group {group} #{cseq}", c), bytes !== undefined ? ` · ${t("{bytes} per rank", { bytes: formatBytes(bytes) })}` : "",
        site ? ` · ${site.path.split("/").pop()}:${site.line}` : "",
        state.event?.kind === "collective" ? "" : ` · ${t("(the last collective before this step)")}`)),
    h("p", { class: ["phase-line", `phase-${layout.phase.name}`], "aria-live": "polite" }, phaseSentence(layout, c)),
    h("div", { class: "collective-drawing" }, picture)];
}
