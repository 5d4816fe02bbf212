/**
 * The cost model of a collective: over a sweep of message sizes, the measured time (rank 0's
 * `cost_sweep` metrics) beside the α–β model's prediction, as a small log-log chart and a table with
 * algorithm and bus bandwidth; and the fitted α and β. Drawn from the metrics at the cursor, so the
 * chart fills in as the sweep's points arrive.
 */

import { changed, fill, h, remPx, s, sizeOf } from "paralab/dom.js";
import { formatRate, formatSeconds, formatSize } from "paralab/cost-model.js";
import { t, tText } from "paralab/i18n.js";

/** Metrics this view shows (the numbers panel leaves them out); `cost_sample` (every timed repeat) is
 * the sweep's raw data, kept in the log so the fit can be redone from it. */
export const COST_METRICS = ["cost_sweep", "alpha", "beta", "barrier_latency", "cost_sample", "link_fit"];

const MEASURED = "#0f172a";
const PREDICTED = "#ea580c";

function decadeTicks(lo, hi) {
  const ticks = [];
  for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) ticks.push(10 ** k);
  return ticks;
}

/** The chart: x = bytes (log), y = seconds (log); measured as a solid line with dots, predicted dashed. */
export function sweepChart(points, { width, rem }) {
  const height = Math.max(12 * rem, Math.min(18 * rem, width * 0.42));
  const pad = { l: 4.6 * rem, r: 1 * rem, t: 1.2 * rem, b: 2.8 * rem };
  const xs = points.map((p) => p.bytes);
  const ys = points.flatMap((p) => [p.value, p.predicted]).filter((y) => y > 0 && Number.isFinite(y));
  const x0 = Math.min(...xs) / 1.6;
  const x1 = Math.max(...xs) * 1.6;
  const yt = decadeTicks(Math.min(...ys) / 1.5, Math.max(...ys) * 1.5);
  const y0 = yt[0];
  const y1 = yt[yt.length - 1];
  const X = (x) => pad.l + ((Math.log(x) - Math.log(x0)) / (Math.log(x1) - Math.log(x0))) * (width - pad.l - pad.r);
  const Y = (y) => height - pad.b - ((Math.log(y) - Math.log(y0)) / (Math.log(y1) - Math.log(y0))) * (height - pad.t - pad.b);
  const line = (key) => points.filter((p) => p[key] > 0).map((p, i) => `${i ? "L" : "M"}${X(p.bytes).toFixed(1)},${Y(p[key]).toFixed(1)}`).join(" ");
  const svg = s("svg", { class: "sweep-chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
    "aria-label": t("measured and predicted time of {n} message sizes, log-log", { n: points.length }), style: `font-size: ${0.75 * rem}px` });
  for (const y of yt) {
    svg.append(s("line", { x1: pad.l, x2: width - pad.r, y1: Y(y), y2: Y(y), class: "grid" }),
      s("text", { x: pad.l - 0.4 * rem, y: Y(y), "text-anchor": "end", "dominant-baseline": "central", class: "tick" }, formatSeconds(y)));
  }
  let lastLabel = -Infinity;
  for (const x of xs) {
    svg.append(s("line", { x1: X(x), x2: X(x), y1: pad.t, y2: height - pad.b, class: "grid" }));
    if (X(x) - lastLabel < 3.2 * rem) continue;          // no overlapping labels
    lastLabel = X(x);
    svg.append(s("text", { x: X(x), y: height - pad.b + 1.1 * rem, "text-anchor": "middle", class: "tick" }, formatSize(x)));
  }
  svg.append(s("text", { x: (pad.l + width - pad.r) / 2, y: height - 0.3 * rem, "text-anchor": "middle", class: "axis-label" }, "message size m (bytes, log scale)"));
  svg.append(s("text", { x: 0.9 * rem, y: (pad.t + height - pad.b) / 2, "text-anchor": "middle", class: "axis-label",
                         transform: `rotate(-90 ${0.9 * rem} ${(pad.t + height - pad.b) / 2})` }, "time (log)"));
  svg.append(s("path", { d: line("predicted"), class: "series predicted", stroke: PREDICTED, fill: "none" }));
  svg.append(s("path", { d: line("value"), class: "series measured", stroke: MEASURED, fill: "none" }));
  for (const p of points) {
    if (p.predicted > 0) svg.append(s("rect", { x: X(p.bytes) - 0.22 * rem, y: Y(p.predicted) - 0.22 * rem, width: 0.44 * rem, height: 0.44 * rem,
                                               fill: "white", stroke: PREDICTED, "stroke-width": 2, class: "point predicted" },
      s("title", {}, t("{size}: predicted {time}", { size: formatSize(p.bytes), time: formatSeconds(p.predicted) }))));
    if (p.value > 0) svg.append(s("circle", { cx: X(p.bytes), cy: Y(p.value), r: 0.26 * rem, fill: MEASURED, class: "point measured" },
      s("title", {}, t("{size}: measured {time}", { size: formatSize(p.bytes), time: formatSeconds(p.value) }))));
  }
  return svg;
}

/** "ring all-reduce" in the interface's language: the algorithm's word translated, the op's name kept. */
function modelName(name) {
  if (t(name) !== name) return t(name);
  const m = /^(ring|tree) (.+)$/.exec(name);
  return m ? t(`${m[1]} {op}`, { op: m[2] }) : name;
}

/** "± 12 %" of a fitted value, from its standard error. */
function spread(metric) {
  return metric.stderr > 0 && metric.value > 0 ? ` ± ${Math.round((100 * metric.stderr) / metric.value)} %` : "";
}

/** The fit in words: α and β with their uncertainty, r², and a warning for each reason to doubt it. */
function fitLines(alpha, beta) {
  if (!alpha && !beta) return h("p", { class: "cost-fit pending" }, "α and β arrive when the sweep ends.");
  const warnings = alpha?.warnings || beta?.warnings || [];
  return [
    h("p", { class: "cost-fit" },
      h("span", { class: "label" }, "fitted from ping-pong between ranks 0 and 1: "),
      alpha ? [h("strong", {}, `α = ${formatSeconds(alpha.value)}`), spread(alpha), " per message"] : null,
      alpha && beta ? " · " : null,
      beta ? [h("strong", {}, `β = ${beta.value > 0 ? `${(beta.value * 1e9).toPrecision(3)} ns/B` : "0"}`), spread(beta),
        beta.value > 0 ? ` (1/β = ${formatRate(1 / beta.value)})` : ""] : null,
      alpha?.r2 !== undefined ? ` · r² = ${Number(alpha.r2).toFixed(2)}` : null),
    warnings.length ? h("ul", { class: "cost-warnings", role: "note" }, warnings.map((w) => h("li", {}, `⚠ ${tText(w)}`))) : null,
  ];
}

/** On ranks spread over hosts (a Ray cluster): α and β fitted again per link class, inside a host and across. */
function linkLines(links) {
  return h("ul", { class: "cost-links" }, links.map((fit) => h("li", { class: "cost-link", "data-link": fit.link },
    t("{link} (ranks 0 and {peer}): α = {alpha} per message, β = {beta}", {
      link: t(fit.link), peer: fit.ranks?.[1] ?? "?", alpha: formatSeconds(fit.value),
      beta: fit.beta > 0 ? `${(fit.beta * 1e9).toPrecision(3)} ns/B` : "0" }))));
}

function barrierLine(barrier) {
  return h("p", { class: "cost-barrier" }, h("span", { class: "label" }, "barrier: "),
    h("strong", {}, formatSeconds(barrier.value)), " measured (it moves no data: a latency only)",
    barrier.expected !== undefined ? [" · ", h("code", {}, barrier.formula || ""), ` = ${formatSeconds(barrier.expected)}`] : null);
}

export function renderCost(container, state, { runId, worldSize }) {
  const points = state.series.get("cost_sweep") || [];
  const alpha = state.metrics.get("alpha");
  const beta = state.metrics.get("beta");
  const barrier = state.metrics.get("barrier_latency");
  const links = state.series.get("link_fit") || [];
  if (!points.length && !alpha && !barrier) {
    if (changed(container, "none")) fill(container, h("p", { class: "empty" }, "No sweep points yet at this step."));
    return true;
  }
  const rem = remPx();
  const width = Math.max(320, Math.min(sizeOf(container).width || 640, 46 * rem));
  const key = [runId, rem, width, points.length, alpha?.seq, beta?.seq, barrier?.seq, links.length].join(",");
  if (!changed(container, key)) return true;
  const p = worldSize || state.ranks.length;
  const model = points.find((pt) => pt.formula) || null;   // the lesson's α–β model, sent with its sweep
  const sorted = [...points].sort((a, b) => a.bytes - b.bytes);
  fill(container,
    h("div", { class: "cost-model" },
      model ? h("p", { class: "cost-formula" }, h("span", { class: "label" }, `${t("α–β model of {name} on p = {p}:", { name: modelName(model.model || ""), p })} `),
        h("code", {}, model.formula)) : null,
      fitLines(alpha, beta),
      links.length ? linkLines(links) : null,
      barrier ? barrierLine(barrier) : null),
    sorted.length ? h("div", { class: "sweep" },
      h("figure", { class: "sweep-figure" },
        sweepChart(sorted, { width, rem }),
        h("figcaption", { class: "sweep-legend" },
          h("span", { class: "key measured" }, h("span", { class: "swatch", style: { background: MEASURED } }),
            sorted[0]?.round_trip ? "measured round trip (median of 5)" : "measured (median of 5, slowest rank)"),
          h("span", { class: "key predicted" }, h("span", { class: "swatch dashed", style: { borderColor: PREDICTED } }), "α–β prediction"))),
      h("table", { class: "sweep-table" },
        h("thead", {}, h("tr", {}, ["size m", "measured", "predicted", "ratio", "algbw", "busbw"].map((label, i) =>
          h("th", { scope: "col", class: i ? "num" : null }, label)))),
        h("tbody", {}, sorted.map((pt) => h("tr", { class: state.event?.seq === pt.seq ? "current" : null },
          h("td", {}, formatSize(pt.bytes)),
          h("td", { class: "num" }, formatSeconds(pt.value)),
          h("td", { class: "num" }, formatSeconds(pt.predicted)),
          h("td", { class: "num" }, pt.predicted > 0 ? `${(pt.value / pt.predicted).toFixed(2)}×` : "–"),
          h("td", { class: "num" }, formatRate(pt.algbw)),
          h("td", { class: "num" }, formatRate(pt.busbw)))))))
      : barrier ? null : h("p", { class: "empty" }, "No sweep points yet at this step."));
  return true;
}
