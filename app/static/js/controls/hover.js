/**
 * Values on hover: over any heatmap canvas, a tooltip names the element under the pointer and its
 * value. Where the preview is block-averaged, it says so, fetches the full tensor once (by its id)
 * and then shows the exact value.
 */

import { t } from "paralab/i18n.js";
import { formatNumber } from "paralab/replay.js";
import { here } from "paralab/root.js";

const fullTensors = new Map();   // "run/tid" → Promise of {shape, values}

function fetchFull(runId, tensorId) {
  const key = `${runId}/${tensorId}`;
  if (!fullTensors.has(key)) {
    // not kept when missing: a rank writes its blobs after the events that name them (a live run)
    fullTensors.set(key, fetch(here(`/api/runs/${encodeURIComponent(runId)}/tensors/${encodeURIComponent(tensorId)}`))
      .then((r) => (r.ok ? r.json() : null)).catch(() => null)
      .then((full) => { if (!full) fullTensors.delete(key); return full; }));
  }
  return fullTensors.get(key);
}

export function bindHover(tooltip) {
  let token = 0;
  function hide() {
    tooltip.hidden = true;
  }
  document.addEventListener("pointermove", (event) => {
    const canvas = event.target;
    if (canvas instanceof HTMLCanvasElement && canvas.gantt) {      // a big run's Gantt chart (views/gantt-canvas.js)
      const title = canvas.gantt.titleAt(event.clientX, event.clientY);
      return title ? show(title) : hide();
    }
    const map = canvas instanceof HTMLCanvasElement ? canvas.heatmap : null;
    if (!map) return hide();
    const rect = canvas.getBoundingClientRect();
    const c = Math.min(map.cols - 1, Math.floor(((event.clientX - rect.left) / rect.width) * map.cols));
    const r = Math.min(map.rows - 1, Math.floor(((event.clientY - rect.top) / rect.height) * map.rows));
    const hit = map.valueAt(r, c);
    const where = `${map.name}[${r}, ${c}]`;
    const mine = ++token;
    if (!hit) {
      show(t("{where}: not received yet", { where }));
    } else {
      const owner = hit.region.rank !== null && hit.region.rank !== undefined ? ` — rank ${hit.region.rank}` : "";
      if (hit.exact || hit.value === null) {
        show(`${where} = ${hit.value === null ? "–" : formatNumber(hit.value)}${owner}`);
      } else {
        show(`${where} ≈ ${formatNumber(hit.value)} ${t("(block mean)")}${owner}`);
        const id = hit.region.tensor?.id;
        if (id && map.runId) {
          fetchFull(map.runId, id).then((full) => {
            if (!full || mine !== token) return;
            const value = full.values[(r - hit.region.r0) * hit.region.cols + (c - hit.region.c0)];
            if (value !== undefined) show(`${where} = ${formatNumber(value)}${owner}`);
          });
        }
      }
    }
    function show(text) {
      tooltip.textContent = text;
      tooltip.hidden = false;
      const x = Math.min(event.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8);
      const y = Math.min(event.clientY + 18, window.innerHeight - tooltip.offsetHeight - 8);
      tooltip.style.left = `${x}px`;
      tooltip.style.top = `${y}px`;
    }
  });
  document.addEventListener("pointerleave", hide);
  window.addEventListener("scroll", hide, { passive: true });
}
