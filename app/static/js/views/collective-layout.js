/**
 * Where everything in the collective drawing goes, as plain data (no DOM): a column per member rank,
 * its input block on top, its output block below, the sums (Σ) between, and the flows of data.
 *
 *   all_reduce      every rank's block flows into one Σ; the whole sum flows back to every rank
 *   all_gather      rank i's chunk is copied into slot i of every rank's output (rank order)
 *   reduce_scatter  chunk j of every rank flows to rank j's Σ; rank j keeps that summed chunk
 *   broadcast       the root's block is copied to every rank
 *   reduce          every rank's block flows into a Σ kept by the root
 *   others          every rank's block meets at one point and goes back out
 */

import { rankColour, SUM_COLOUR } from "paralab/palette.js";
import { matrixShape } from "paralab/views/heatmap.js";

export const OP_STORY = {
  all_reduce: "every rank's block flows into one sum, and the whole sum goes back to every rank",
  all_gather: "each rank's chunk is copied to every rank; the chunks are concatenated in rank order",
  reduce_scatter: "chunk i of every rank flows to rank i, where the chunks are summed",
  broadcast: "the root's block is copied to every rank",
  reduce: "every rank's block flows into a sum that only the root keeps",
  all_to_all: "each rank sends chunk j of its block to rank j",
  scatter: "the root sends chunk i of its block to rank i",
  gather: "every rank's block is collected by the root",
  barrier: "no data: every rank waits until all have arrived",
};

function curve(x0, y0, x1, y1) {
  const my = (y0 + y1) / 2;
  return `M${x0.toFixed(1)},${y0.toFixed(1)} C${x0.toFixed(1)},${my.toFixed(1)} ${x1.toFixed(1)},${my.toFixed(1)} ${x1.toFixed(1)},${y1.toFixed(1)}`;
}

function tensorsOf(event) {
  return event?.tensors || [];
}

export function phaseOf(c) {
  const arrived = c.ranks.filter((r) => c.begins.has(r));
  const finished = c.ranks.filter((r) => c.ends.has(r));
  if (arrived.length < c.ranks.length) return { name: "waiting", arrived, finished };
  if (finished.length < c.ranks.length) return { name: "moving", arrived, finished };
  return { name: "done", arrived, finished };
}

export function layoutCollective(c, { width, rem }) {
  const members = [...c.ranks].sort((a, b) => a - b);
  const n = members.length || 1;
  const op = c.op;
  const phase = phaseOf(c);
  const colW = width / n;
  const bw = Math.min(colW * 0.72, 9 * rem);
  const anyTensor = [...c.begins.values(), ...c.ends.values()].flatMap(tensorsOf)[0];
  const [fr, fcols] = matrixShape(op === "all_gather" ? tensorsOf([...c.ends.values()][0])[0]?.shape || c.shape : c.shape || anyTensor?.shape);
  const full = Math.max(1.4 * rem, Math.min(6 * rem, bw * (fr / fcols)));
  const chunk = Math.max(0.7 * rem, full / n);
  const hIn = op === "all_gather" ? chunk : full;
  const hOut = op === "reduce_scatter" ? chunk : full;
  const hubR = 1.1 * rem;
  const hasHub = !["all_gather", "broadcast", "barrier"].includes(op);
  const yIn = 2.4 * rem;
  const hubY = yIn + hIn + 3.2 * rem;
  const yOut = hasHub ? hubY + hubR + 2.6 * rem : yIn + hIn + 5.5 * rem;
  const height = yOut + hOut + 1.6 * rem;
  const cx = (k) => colW * (k + 0.5);
  const root = members.includes(c.root) ? c.root : members[0];
  const column = (r) => members.indexOf(r);

  const columns = members.map((r, k) => ({
    rank: r, cx: cx(k), colour: rankColour(r),
    state: c.ends.has(r) ? "done" : c.begins.has(r) ? (phase.name === "waiting" ? "waiting" : "sending") : "not here yet",
  }));

  const stripes = (count, colourOf) => Array.from({ length: count }, (_, j) => ({ index: j, colour: colourOf(j) }));
  const blocks = [];
  members.forEach((r, k) => {
    blocks.push({
      kind: "in", rank: r, x: cx(k) - bw / 2, y: yIn, w: bw, h: hIn, outline: rankColour(r),
      present: c.begins.has(r), tensors: tensorsOf(c.begins.get(r)),
      stripes: op === "reduce_scatter" || op === "all_to_all" ? stripes(n, (j) => rankColour(members[j])) : null,
      caption: op === "reduce_scatter" ? "chunk j goes to rank j" : null,
    });
    const sumOutline = op === "all_reduce" || (op === "reduce" && r === root);
    blocks.push({
      kind: "out", rank: r, x: cx(k) - bw / 2, y: yOut, w: bw, h: hOut,
      outline: sumOutline ? SUM_COLOUR : rankColour(r),
      present: c.ends.has(r), tensors: tensorsOf(c.ends.get(r)),
      stripes: op === "all_gather" || op === "all_to_all" ? stripes(n, (j) => rankColour(members[j])) : null,
      caption: { all_reduce: "the sum", reduce_scatter: "its summed chunk", all_gather: "all chunks, in rank order",
                 reduce: r === root ? "the sum" : "unchanged", broadcast: r === root ? "its own block" : "the root's block" }[op] || null,
    });
  });

  const hubs = [];
  const flows = [];
  const inBottom = (k) => [cx(k), yIn + hIn];
  const ownDrawing = ["reduce", "reduce_scatter", "all_gather", "broadcast", "barrier"];
  if (!ownDrawing.includes(op)) {          // all_reduce, and the generic picture for the others
    const hx = width / 2;
    hubs.push({ x: hx, y: hubY, r: hubR, label: op === "all_reduce" ? "Σ" : "⇄" });
    members.forEach((r, k) => {
      flows.push({ stage: "in", from: r, to: null, colour: rankColour(r), d: curve(...inBottom(k), hx, hubY - hubR), done: false });
      flows.push({ stage: "out", from: null, to: r, colour: op === "all_reduce" ? SUM_COLOUR : rankColour(r),
                   d: curve(hx, hubY + hubR, cx(k), yOut), done: c.ends.has(r) });
    });
  } else if (op === "reduce") {
    const k0 = column(root);
    hubs.push({ x: cx(k0), y: hubY, r: hubR, label: "Σ" });
    members.forEach((r, k) => flows.push({ stage: "in", from: r, to: root, colour: rankColour(r),
                                           d: curve(...inBottom(k), cx(k0), hubY - hubR), done: false }));
    flows.push({ stage: "out", from: null, to: root, colour: SUM_COLOUR, d: curve(cx(k0), hubY + hubR, cx(k0), yOut), done: c.ends.has(root) });
  } else if (op === "reduce_scatter") {
    const sh = hIn / n;
    members.forEach((dest, j) => {
      hubs.push({ x: cx(j), y: hubY, r: hubR * 0.8, label: "Σ", rank: dest });
      members.forEach((src, i) => flows.push({
        stage: "in", from: src, to: dest, colour: rankColour(src),
        d: curve(cx(i), yIn + (j + 0.5) * sh, cx(j), hubY - hubR * 0.8), done: false,
      }));
      flows.push({ stage: "out", from: null, to: dest, colour: SUM_COLOUR, d: curve(cx(j), hubY + hubR * 0.8, cx(j), yOut),
                   done: c.ends.has(dest) });
    });
  } else if (op === "all_gather") {
    const sh = hOut / n;
    members.forEach((src, i) => members.forEach((dest, j) => flows.push({
      stage: "direct", from: src, to: dest, colour: rankColour(src),
      d: curve(...inBottom(i), cx(j), yOut + (i + 0.5) * sh), done: c.ends.has(dest),
    })));
  } else if (op === "broadcast") {
    const k0 = column(root);
    members.forEach((dest, j) => flows.push({ stage: "direct", from: root, to: dest, colour: rankColour(root),
                                              d: curve(...inBottom(k0), cx(j), yOut), done: c.ends.has(dest) }));
  }
  return { width, height, op, phase, columns, blocks, hubs, flows, packet: { w: Math.min(bw * 0.35, 2.2 * rem), h: 0.7 * rem } };
}
