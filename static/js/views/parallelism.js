/**
 * The pictures of the parallelism lessons, each in its own panel of the lesson page and shown only
 * for the runs that carry its data: the pipeline Gantt chart (pp), the ranks' timeline (dp, zero,
 * three_d), the process-group grid (three_d), memory per rank (zero), and the measured numbers no
 * other panel shows (tp_attention's KV cache copies). Panels are found by id, so a page without one
 * (a lecture room) simply skips it.
 */

import { renderMemory } from "paralab/views/memory.js";
import { renderNumbers } from "paralab/views/numbers.js";
import { renderPipeline } from "paralab/views/pipeline.js";
import { renderTimeline } from "paralab/views/timeline.js";
import { renderTopology } from "paralab/views/topology.js";

const TIMELINE_LESSONS = ["dp", "zero", "three_d"];

function panel(name, shown, draw) {
  const section = document.getElementById(`${name}-panel`);
  const body = document.getElementById(name);
  if (!section || !body) return;
  if (!shown) {
    section.hidden = true;
    return;
  }
  section.hidden = false;            // visible first: the drawings size themselves to the panel's width
  section.hidden = !draw(body);
}

/** ctx: {runId, worldSize, lesson, params}. */
export function renderParallelism(state, ctx) {
  const ran = Boolean(ctx.runId);
  panel("pipeline", ran && (ctx.lesson === "pp" || Boolean(state.schedule)), (el) => renderPipeline(el, state, ctx));
  panel("timeline", ran && TIMELINE_LESSONS.includes(ctx.lesson), (el) => renderTimeline(el, state, ctx));
  panel("topology", ran && (ctx.lesson === "three_d" || Boolean(state.topology)), (el) => renderTopology(el, state, ctx));
  panel("memory", ran && ctx.lesson === "zero", (el) => renderMemory(el, state, ctx));
  panel("numbers", ran, (el) => renderNumbers(el, state, ctx));
}
