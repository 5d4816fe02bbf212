/**
 * 3D parallelism's process groups: every rank drawn at its (dp, stage, tp) place — one plane per
 * data-parallel replica, stages as rows, tensor-parallel ranks as columns, so that
 *   a row of a plane is a TP group, a column a PP pipeline, the same place in every plane a DP group
 *   (rank = dp·(pp·tp) + stage·tp + tp_rank).
 * A group lights up while a collective of it runs at the cursor; a send/recv lights its two ranks'
 * link. Below: the traffic of each kind of group so far, and the DP sync's bytes against the formula.
 * Where the log has `host` events (a run on a Ray cluster, a torchrun job), each host's ranks sit in a
 * labelled box, and a line says which kinds of group stay inside one host and which cross hosts.
 */

import { changed, fill, h, remPx, s, sizeOf } from "paralab/dom.js";
import { t, tPlural, tText } from "paralab/i18n.js";
import { rankColour } from "paralab/palette.js";
import { formatBytes, rankList } from "paralab/replay.js";
import { GROUP_COLOURS, groupKind } from "paralab/views/timeline.js";

export const TOPOLOGY_METRICS = ["dp_sync_bytes"];
const KIND_NAMES = { tp: "TP", pp: "PP", dp: "DP" };

/** The rank at (d, s, t). */
export function rankAt(topology, d, s_, t) {
  return d * topology.pp * topology.tp + s_ * topology.tp + t;
}

/** The groups and send/recv links at work at the cursor: collectives begun and not yet ended by every member, recvs waiting. */
export function activeAt(state) {
  const groups = [];
  const e = state.event;
  for (const c of state.collectives.values()) {
    const current = e?.kind === "collective" && c === state.current;
    const running = c.begins.size > 0 && c.ends.size < c.ranks.length;
    if (!current && !running) continue;
    groups.push({ kind: groupKind(c.group), ranks: c.ranks, c, current });
  }
  const links = [];
  for (const sp of state.p2p) {
    const current = e?.kind === "p2p" && (sp.seq === e.seq || sp.end?.seq === e.seq);
    const waiting = sp.op === "recv" && sp.t1 === null;
    if (!current && !waiting) continue;
    if (sp.peer === null || sp.peer === undefined) continue;
    const [from, to] = sp.op === "send" ? [sp.rank, sp.peer] : [sp.peer, sp.rank];
    links.push({ from, to, current, span: sp });
  }
  return { groups, links };
}

/** Each kind of group's members, from the grid: TP a row of a plane, PP a column, DP one place in every plane. */
export function gridGroups(topology) {
  const { tp, pp, dp } = topology;
  const groups = { tp: [], pp: [], dp: [] };
  for (let d = 0; d < dp; d++) for (let s_ = 0; s_ < pp; s_++) groups.tp.push([...Array(tp).keys()].map((t) => rankAt(topology, d, s_, t)));
  for (let d = 0; d < dp; d++) for (let t = 0; t < tp; t++) groups.pp.push([...Array(pp).keys()].map((s_) => rankAt(topology, d, s_, t)));
  for (let s_ = 0; s_ < pp; s_++) for (let t = 0; t < tp; t++) groups.dp.push([...Array(dp).keys()].map((d) => rankAt(topology, d, s_, t)));
  return groups;
}

/** rank → its host's name, from the log's latest `host` event of each node. */
function hostOfRank(hosts) {
  const hostOf = new Map();
  for (const e of hosts?.values() || []) for (const rank of e.ranks) hostOf.set(rank, e.host);
  return hostOf;
}

/** A host's ranks as rectangles of the grid: per plane, the runs of adjacent columns of each row,
 * rows with the same run merged (so a whole plane on one host is one box, a TP pair one). */
export function hostBlocks(topology, ranks) {
  const mine = new Set(ranks);
  const blocks = [];
  for (let d = 0; d < topology.dp; d++) {
    for (let st = 0; st < topology.pp; st++) {
      for (let t = 0; t < topology.tp; t++) {
        if (!mine.has(rankAt(topology, d, st, t))) continue;
        let t1 = t;
        while (t1 + 1 < topology.tp && mine.has(rankAt(topology, d, st, t1 + 1))) t1++;
        const above = blocks.find((b) => b.d === d && b.st1 === st - 1 && b.t0 === t && b.t1 === t1);
        if (above) above.st1 = st;
        else blocks.push({ d, st0: st, st1: st, t0: t, t1 });
        t = t1;
      }
    }
  }
  return blocks;
}

/** For each kind of group: how many of its groups have every member on one host, of how many. */
export function groupsInsideHosts(topology, hostOf) {
  const counts = {};
  for (const [kind, groups] of Object.entries(gridGroups(topology))) {
    const inside = groups.filter((g) => hostOf.has(g[0]) && new Set(g.map((r) => hostOf.get(r))).size === 1).length;
    counts[kind] = { inside, of: groups.length };
  }
  return counts;
}

function layout(topology, width, rem, withHosts) {
  const { tp, pp, dp } = topology;
  // with hosts, rows stand further apart: each host's box has its name under its ranks
  const unit = { bw: 6.4, bh: 3.4, gx: 1.0, gy: withHosts ? 2.6 : 1.2, pad: 1.0, between: 2.4, head: 2.2, rowLabel: 3.8,
                 foot: withHosts ? 1.4 : 0 };
  const planeW = unit.rowLabel + tp * unit.bw + (tp - 1) * unit.gx + 2 * unit.pad;
  const planeH = unit.head + pp * unit.bh + (pp - 1) * unit.gy + 2 * unit.pad + unit.foot;
  const totalW = dp * planeW + (dp - 1) * unit.between;
  const k = Math.min(rem, width / totalW);      // px per unit: 1rem, or less to fit
  const box = (r) => {
    const [d, st, t] = topology.coordinates[r];
    const x = (d * (planeW + unit.between) + unit.pad + unit.rowLabel + t * (unit.bw + unit.gx)) * k;
    const y = (unit.head + unit.pad + st * (unit.bh + unit.gy)) * k;
    return { x, y, w: unit.bw * k, h: unit.bh * k, cx: x + (unit.bw * k) / 2, cy: y + (unit.bh * k) / 2 };
  };
  return { k, unit, planeW: planeW * k, planeH: planeH * k, width: totalW * k, height: planeH * k + 0.4 * k, box,
           planeX: (d) => d * (planeW + unit.between) * k };
}

function hull(boxes, k, pad = 0.45) {
  const x0 = Math.min(...boxes.map((b) => b.x)) - pad * k;
  const y0 = Math.min(...boxes.map((b) => b.y)) - pad * k;
  const x1 = Math.max(...boxes.map((b) => b.x + b.w)) + pad * k;
  const y1 = Math.max(...boxes.map((b) => b.y + b.h)) + pad * k;
  return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}

/** The hosts' boxes, behind everything: a dashed outline around each block of a host's ranks, its name below. */
function drawHosts(topology, hosts, L) {
  const { k } = L;
  const sorted = [...(hosts?.values() || [])].sort((a, b) => a.node - b.node);
  return sorted.flatMap((host, i) => hostBlocks(topology, host.ranks.filter((r) => r < topology.coordinates.length)).map((b) => {
    const first = L.box(rankAt(topology, b.d, b.st0, b.t0));
    const last = L.box(rankAt(topology, b.d, b.st1, b.t1));
    const x = first.x - 0.4 * k;
    const y = first.y - 0.4 * k;
    const w = last.x + last.w + 0.4 * k - x;
    const hgt = last.y + last.h + 1.7 * k - y;
    return s("g", { class: ["topo-host", i % 2 && "odd"], "data-host": host.host, "data-node": host.node },
      s("rect", { x, y, width: w, height: hgt, rx: 0.6 * k, class: "topo-host-box" }),
      s("text", { x: x + 0.5 * k, y: y + hgt - 0.45 * k, class: "topo-host-name" }, host.host),
      s("title", {}, `${t("node {node} · {host}", { node: host.node, host: host.host })}: ${rankList(host.ranks)}`));
  }));
}

/** "TP groups: each inside one host · PP: across hosts · DP: across hosts", from where the ranks ran. */
function hostsLine(topology, hosts) {
  const hostOf = hostOfRank(hosts);
  const counts = groupsInsideHosts(topology, hostOf);
  const names = new Set(hostOf.values());
  const said = ["tp", "pp", "dp"].filter((kind) => topology[kind] > 1).map((kind) => {
    const { inside, of } = counts[kind];
    const where = inside === of ? t("each inside one host") : inside === 0 ? t("each across hosts")
      : t("{inside} of {of} inside one host", { inside, of });
    return h("span", { class: "topo-host-kind", "data-kind": kind },
      h("span", { class: "topo-kind", style: { background: GROUP_COLOURS[kind] } }, KIND_NAMES[kind]), ` ${where}`);
  });
  return h("p", { class: "topo-hosts" }, h("strong", {}, tPlural(names.size, "{n} host", "{n} hosts")), said.length ? ": " : "",
    said.flatMap((el, i) => (i ? [" · ", el] : [el])));
}

function drawGrid(topology, state, width, rem, hosts) {
  const L = layout(topology, width, rem, Boolean(hosts?.size));
  const { k, unit } = L;
  const { groups, links } = activeAt(state);
  const svg = s("svg", { class: "topology-svg", viewBox: `0 0 ${L.width} ${L.height}`, width: L.width, height: L.height, role: "img",
                         "aria-label": t("{dp} replicas × {pp} stages × {tp} tensor-parallel ranks", topology),
                         style: `font-size: ${0.8 * k}px` });
  svg.append(s("defs", {}, ["tp", "pp", "dp"].map((kind) =>
    s("marker", { id: `topo-arrow-${kind}`, viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 4, markerHeight: 4, orient: "auto" },
      s("path", { d: "M0,0 L10,5 L0,10 z", fill: GROUP_COLOURS[kind] })))));
  for (let d = 0; d < topology.dp; d++) {
    const x = L.planeX(d);
    svg.append(s("rect", { x: x + 0.1 * k, y: 0.1 * k, width: L.planeW - 0.2 * k, height: L.planeH - 0.2 * k, rx: 0.6 * k, class: "topo-plane" }),
      s("text", { x: x + L.planeW / 2, y: 1.3 * k, "text-anchor": "middle", class: "topo-plane-title" },
        topology.dp > 1 ? t("DP replica {d}", { d }) : t("the model (one replica)")));
    for (let st = 0; st < topology.pp; st++) {
      const b = L.box(rankAt(topology, d, st, 0));
      svg.append(s("text", { x: x + (unit.pad + unit.rowLabel - 0.5) * k, y: b.cy, "text-anchor": "end", "dominant-baseline": "central", class: "topo-axis" }, `stage ${st}`));
    }
  }
  svg.append(...drawHosts(topology, hosts, L));
  // lit groups: behind the boxes
  const lit = new Map();   // rank → kinds lit
  for (const g of groups) {
    const boxes = g.ranks.filter((r) => r < topology.coordinates.length).map(L.box);
    if (!boxes.length) continue;
    for (const r of g.ranks) lit.set(r, [...(lit.get(r) || []), g.kind]);
    const colour = GROUP_COLOURS[g.kind] || GROUP_COLOURS.world;
    const attrs = { class: ["topo-group", g.kind, g.current && "current"], "data-kind": g.kind, "data-ranks": g.ranks.join(","),
                    stroke: colour, fill: colour };
    if (g.kind === "dp") {
      // the members sit in different planes: a band through them, and a ring around each
      const path = boxes.map((b, i) => `${i ? "L" : "M"}${b.cx.toFixed(1)},${(b.y + b.h + 0.3 * k).toFixed(1)}`).join(" ");
      svg.append(s("g", attrs,
        s("path", { d: path, class: "topo-dp-link", fill: "none", "stroke-width": 0.35 * k }),
        boxes.map((b) => s("rect", { x: b.x - 0.3 * k, y: b.y - 0.3 * k, width: b.w + 0.6 * k, height: b.h + 0.6 * k, rx: 0.5 * k, class: "topo-hull" })),
        s("title", {}, groupTitle("DP", g))));
    } else {
      const hb = hull(boxes, k);
      svg.append(s("g", attrs, s("rect", { x: hb.x, y: hb.y, width: hb.w, height: hb.h, rx: 0.6 * k, class: "topo-hull" }),
        s("title", {}, groupTitle(KIND_NAMES[g.kind] || g.kind, g))));
    }
  }
  const current = state.event?.rank;
  for (let r = 0; r < topology.coordinates.length; r++) {
    const b = L.box(r);
    const [d, st, tp] = topology.coordinates[r];
    const kinds = lit.get(r) || [];
    svg.append(s("g", { class: ["topo-rank", kinds.length && "active", current === r && "current"], "data-rank": r,
                        "data-active": kinds.join(" ") || null },
      s("rect", { x: b.x, y: b.y, width: b.w, height: b.h, rx: 0.45 * k, class: "topo-box", style: `--rank: ${rankColour(r)}` }),
      s("rect", { x: b.x, y: b.y, width: 0.5 * k, height: b.h, rx: 0.2 * k, fill: rankColour(r) }),
      s("text", { x: b.cx + 0.2 * k, y: b.cy - 0.55 * k, "text-anchor": "middle", "dominant-baseline": "central", class: "topo-rank-label" }, `rank ${r}`),
      s("text", { x: b.cx + 0.2 * k, y: b.cy + 0.85 * k, "text-anchor": "middle", "dominant-baseline": "central", class: "topo-coords" }, `d${d} · s${st} · t${tp}`),
      s("title", {}, `rank ${r} = ${d}·${topology.pp * topology.tp} + ${st}·${topology.tp} + ${tp}: `
        + t("replica {d}, stage {st}, tensor-parallel rank {tp}", { d, st, tp }))));
  }
  for (const ln of links) {
    if (ln.from >= topology.coordinates.length || ln.to >= topology.coordinates.length) continue;
    const a = L.box(ln.from);
    const b = L.box(ln.to);
    const down = b.cy > a.cy;
    const y0 = down ? a.y + a.h : a.y;
    const y1 = down ? b.y : b.y + b.h;
    svg.append(s("path", { d: `M${a.cx + (down ? -0.6 : 0.6) * k},${y0} L${b.cx + (down ? -0.6 : 0.6) * k},${y1}`, class: ["topo-link", ln.current && "current"],
                           stroke: GROUP_COLOURS.pp, "stroke-width": 0.3 * k, "marker-end": "url(#topo-arrow-pp)",
                           "data-from": ln.from, "data-to": ln.to },
      s("title", {}, `${ln.span.label || "send/recv"}: rank ${ln.from} → rank ${ln.to}`)));
  }
  return { svg, groups, links };
}

/** "TP group 0, 1: all_reduce — its label": a lit group's tooltip. */
function groupTitle(kind, g) {
  return t("{kind} group {ranks}: {op}", { kind, ranks: g.ranks.join(", "), op: g.c.op }) + (g.c.label ? ` — ${tText(g.c.label)}` : "");
}

function nowLine(groups, links, state) {
  const e = state.event;
  const cur = groups.find((g) => g.current) || groups[0];
  if (cur) {
    const waiting = cur.c.ranks.filter((r) => !cur.c.begins.has(r));
    return h("p", { class: ["topo-now", cur.kind] },
      h("span", { class: "topo-kind", style: { background: GROUP_COLOURS[cur.kind] || GROUP_COLOURS.world } }, KIND_NAMES[cur.kind] || cur.kind),
      ` ${t("{op} among ranks {ranks}", { op: cur.c.op.replace(/_/g, "-"), ranks: cur.ranks.join(", ") })}`, cur.c.label ? ` — ${tText(cur.c.label)}` : "",
      waiting.length ? h("span", { class: "topo-wait" }, ` ${t("(waiting for {ranks})", { ranks: rankList(waiting) })}`) : "",
      groups.length > 1 ? h("span", { class: "topo-more" }, ` · ${tPlural(groups.length - 1, "{n} more group busy", "{n} more groups busy")}`) : "");
  }
  const ln = links.find((l) => l.current) || links[0];
  if (ln) {
    return h("p", { class: "topo-now pp" }, h("span", { class: "topo-kind", style: { background: GROUP_COLOURS.pp } }, "PP"),
      ` rank ${ln.from} → rank ${ln.to}`, ln.span.label ? ` — ${tText(ln.span.label).replace(/^(send|recv) /, "")}` : "");
  }
  return h("p", { class: "topo-now idle" }, e ? "No group communicates at this step: the ranks compute." : "");
}

function traffic(state) {
  const rows = new Map();
  const add = (kind, bytes) => {
    if (!rows.has(kind)) rows.set(kind, { calls: 0, bytes: 0 });
    const r = rows.get(kind);
    r.calls += 1;
    r.bytes += bytes || 0;
  };
  for (const c of state.collectives.values()) add(groupKind(c.group), c.begins.values().next().value?.bytes ?? c.bytes);
  for (const sp of state.p2p) if (sp.op === "send") add("pp", sp.begin?.bytes);
  return rows;
}

function dpSync(state, params, topology) {
  const series = state.rankMetrics.get("dp_sync_bytes");
  if (!series || !series.size) {
    return h("p", { class: "dp-sync pending" }, "DP sync: each rank reports the bytes it all-reduced across replicas at the end of the run.");
  }
  const values = [...series.values()].map((list) => list.at(-1));
  const e = values[0];
  const same = values.every((x) => x.value === e.value && x.expected === e.expected);
  const ratio = e.expected ? e.value / e.expected : null;
  const m = params?.microbatches;
  const mistake = params?.mistake || "none";
  let verdict;
  if (ratio !== null && ratio > 1.001) {
    verdict = h("p", { class: "dp-verdict fail" }, h("strong", {}, `${t("{ratio}× the expected DP traffic.", { ratio: Number(ratio.toFixed(2)) })} `),
      mistake === "sync_every_microbatch"
        ? t("The gradients are all-reduced after every one of the m = {m} microbatches instead of once after the last backward: the same numbers, m times the bytes.", { m })
        : "More gradient bytes crossed the replicas than one all-reduce of each gradient shard.");
  } else if (mistake === "sync_before_last_backward") {
    verdict = h("p", { class: "dp-verdict fail" }, h("strong", {}, "The right number of bytes at the wrong time: "),
      "the sync runs before the last microbatch's backward, so that microbatch's gradient is never averaged — the gradient checks fail.");
  } else {
    verdict = h("p", { class: "dp-verdict pass" }, h("strong", {}, "✓ as expected: "), "one all-reduce of each gradient shard, once, after the last backward.");
  }
  return h("div", { class: "dp-sync" },
    h("p", {}, h("span", { class: "label" }, "DP gradient sync per rank: "), h("strong", { class: "dp-measured" }, formatBytes(e.value)),
      " measured · ", h("span", { class: "dp-expected" }, t("{bytes} expected", { bytes: formatBytes(e.expected) })),
      e.formula ? [" (", h("code", {}, e.formula), ")"] : "",
      h("span", { class: "panel-note" }, t(`${same ? "the same on" : "differs between"} ${values.length === topology.coordinates.length ? "all {n} ranks" : "the {n} ranks reported so far"}`,
        { n: values.length }))),
    verdict);
}

export function renderTopology(container, state, { runId, params, contents }) {
  const topology = state.topology;
  if (!topology) {
    changed(container, "none");
    fill(container, h("p", { class: "empty" }, "The process-group grid appears with rank 0's topology event."));
    return true;
  }
  const rem = remPx();
  const width = Math.max(320, sizeOf(container).width || 700);
  const hosts = contents?.hosts;
  const key = [runId, state.index, width, rem, hosts?.size || 0].join(",");
  if (!changed(container, key)) return true;
  const { svg, groups, links } = drawGrid(topology, state, width, rem, hosts);
  const byKind = traffic(state);
  fill(container,
    h("p", { class: "topo-head" }, h("strong", {}, `tp = ${topology.tp} × pp = ${topology.pp} × dp = ${topology.dp} = ${t("{n} ranks", { n: topology.coordinates.length })}`),
      " · ", h("code", {}, "rank = dp·(pp·tp) + stage·tp + tp_rank")),
    h("div", { class: "topo-legend" },
      ["tp", "pp", "dp"].map((kind) => h("span", { class: "key" }, h("span", { class: "swatch", style: { background: GROUP_COLOURS[kind] } }),
        { tp: "TP group: a row of a plane", pp: "PP: a column, send → recv between stages", dp: "DP group: the same place in every plane" }[kind]))),
    hosts?.size ? hostsLine(topology, hosts) : "",
    nowLine(groups, links, state),
    h("div", { class: "topology-drawing" }, svg),
    h("table", { class: "peaks topo-traffic" },
      h("thead", {}, h("tr", {}, h("th", {}, "group"), h("th", { class: "num" }, "calls so far"), h("th", { class: "num" }, "bytes (each call's size, once)"))),
      h("tbody", {}, ["tp", "pp", "dp"].filter((k) => byKind.has(k)).map((k) => h("tr", { "data-kind": k },
        h("th", { scope: "row" }, h("span", { class: "topo-kind", style: { background: GROUP_COLOURS[k] } }, KIND_NAMES[k]),
          k === "pp" ? " send/recv" : " collectives"),
        h("td", { class: "num" }, String(byKind.get(k).calls)), h("td", { class: "num" }, formatBytes(byKind.get(k).bytes)))))),
    dpSync(state, params, topology));
  return true;
}
