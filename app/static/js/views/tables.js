/**
 * The state at the cursor as plain tables, one beside each picture: what a screen reader reads (they
 * are visually hidden until the viewer presses the panel's "Table" button), and what a viewer can copy.
 * Each function takes the folded state (replay.js) and returns a <table>, or null when there is nothing.
 */

import { t, tText } from "paralab/i18n.js";
import { activity, formatNumber } from "paralab/replay.js";
import { gridTable } from "paralab/views/grid-table.js";
import { PARALLEL_TABLES } from "paralab/views/tables-parallel.js";

const MAX_VALUES = 64;   // previews with more values show their statistics only

function table(caption, head, rows, cache) {
  return gridTable(caption, head, rows, { cache });
}

/** "[4×8] min −1.2 max 3.4 mean 0.1", and the values themselves when there are few. */
function tensorCells(tensor) {
  if (!tensor) return ["–", "–", "–", "–", "–"];
  const stats = tensor.stats || {};
  const grid = tensor.preview || [];
  const count = grid.reduce((n, row) => n + (Array.isArray(row) ? row.length : 1), 0);
  const values = count && count <= MAX_VALUES && tensor.exact !== false
    ? grid.map((row) => (Array.isArray(row) ? row : [row]).map(formatNumber).join(" ")).join(" / ")
    : "";
  return [`[${(tensor.shape || []).join("×")}]`, formatNumber(stats.min), formatNumber(stats.max), formatNumber(stats.mean), values];
}

/** One row per rank: what it does at the cursor, where, how many events so far. */
export function lanesTable(state, { cache } = {}) {
  return table("What each rank does at this step", ["rank", "doing", "where", "events"],
    state.ranks.map((rs) => {
      const act = activity(rs, state);
      return [`rank ${rs.rank}`, act.label ? `${act.text} — ${tText(act.label)}` : act.text,
        rs.site ? `${rs.site.path.split("/").pop()}:${rs.site.line}` : "–", String(rs.events)];
    }), cache);
}

/** The collective at the cursor: each member's state, its input and its output. */
export function collectiveTable(state, { cache } = {}) {
  const c = state.current;
  if (!c) return null;
  const rows = [];
  for (const rank of c.ranks) {
    const begin = c.begins.get(rank);
    const end = c.ends.get(rank);
    const where = end ? "done" : begin ? "in the call" : "not here yet";
    const inputs = begin?.tensors?.length ? begin.tensors : [null];
    const outputs = end?.tensors || [];
    inputs.forEach((tensor, i) => {
      const [shape, min, max, mean, values] = tensorCells(tensor);
      const out = tensorCells(outputs[i]);
      rows.push([`rank ${rank}`, where, tensor?.name || "–", `${shape} ${values}`.trim(), t("{min} … {max}, mean {mean}", { min, max, mean }),
        outputs[i] ? `${out[0]} ${out[4]}`.trim() : "–"]);
    });
  }
  return table(`${c.op} (${c.group} #${c.cseq})${c.label ? ` — ${tText(c.label)}` : ""}`,
    ["rank", "state", "tensor", "input", "min … max", "output"], rows, cache);
}

/** Every tensor at the cursor, each rank's part on a row of its own. */
export function tensorsTable(state, { cache } = {}) {
  const rows = [];
  for (const placed of state.placed.values()) {
    for (const shard of [...placed.shards.values()].sort((a, b) => a.rank - b.rank)) {
      const [shape, min, max, mean, values] = tensorCells(shard.tensor);
      rows.push([`${tText(placed.name)} [${placed.fullShape.join("×")}]`, `rank ${shard.rank}`,
        t("{shape} at ({offset})", { shape, offset: (shard.offset || []).join(", ") }), min, max, mean, values]);
    }
  }
  for (const [name, byRank] of state.loose) {
    for (const entry of [...byRank.values()].sort((a, b) => a.rank - b.rank)) {
      const [shape, min, max, mean, values] = tensorCells(entry.tensor);
      rows.push([name, `rank ${entry.rank}`, shape, min, max, mean, values]);
    }
  }
  return table("Tensors at this step", ["tensor", "rank", "part", "min", "max", "mean", "values"], rows, cache);
}

/**
 * Picture id → its table (a function of the state and the page's context {runId, worldSize, lesson, params}).
 * Panels whose picture is already a table (checks, communication, the hang report) need none.
 */
export const TABLES = { lanes: lanesTable, collective: collectiveTable, tensors: tensorsTable, ...PARALLEL_TABLES };
