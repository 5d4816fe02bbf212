/** The named palette, in one place: a colour per rank, colours for outcomes, and the heatmap scale. */

/** One colour per rank (ranks beyond eight reuse them): eight that stay apart on a washed-out projector
 * (every pair at least 15 apart in CIEDE2000, tests/test_palette.py), none a pass/fail green or red, none a
 * process group's highlight; adjacent ranks the furthest apart (2-rank runs are the most common). */
export const RANK_COLOURS = [
  "#1d4ed8", // blue
  "#cf4a0a", // orange (4.5:1 under white text, as every rank chip needs)
  "#0e7490", // cyan
  "#be185d", // pink
  "#a16207", // ochre
  "#a21caf", // fuchsia
  "#7c2d12", // brown
  "#44403c", // stone
];

/** A process group lit while it communicates: light tints, never a rank's colour. */
export const GROUP_COLOURS = { tp: "#14b8a6", pp: "#e879f9", dp: "#eab308", world: "#334155" };

export const SERVER_COLOUR = "#64748b"; // events of the server itself (rank null)
export const SUM_COLOUR = "#1e293b";    // data that is the sum of every rank's data

export const OUTCOME = {
  pass: "#15803d",
  fail: "#b91c1c",
  queued: "#6b7280",
  running: "#0369a1",
  paused: "#a16207",
  done: "#15803d",
  failed: "#b91c1c",
  cancelled: "#92400e",
};

export function rankColour(rank) {
  if (rank === null || rank === undefined) return SERVER_COLOUR;
  return RANK_COLOURS[rank % RANK_COLOURS.length];
}

// Diverging RdBu: negative blue, zero near white, positive red.
const STOPS = [
  [-1, [5, 48, 97]], [-0.5, [67, 147, 195]], [0, [247, 247, 247]], [0.5, [214, 96, 77]], [1, [103, 0, 31]],
];

/** The heatmap colour of `value` on a scale symmetric around 0 reaching ±`limit`, as "rgb(…)". */
export function heatColour(value, limit) {
  if (Number.isNaN(value)) return "rgb(0,0,0)";          // NaN is black; ±inf the scale's ends
  const x = Math.max(-1, Math.min(1, limit > 0 ? value / limit : 0));
  for (let i = 1; i < STOPS.length; i++) {
    const [x1, c1] = STOPS[i];
    if (x <= x1) {
      const [x0, c0] = STOPS[i - 1];
      const f = (x - x0) / (x1 - x0);
      const c = c0.map((v, k) => Math.round(v + f * (c1[k] - v)));
      return `rgb(${c[0]},${c[1]},${c[2]})`;
    }
  }
  return "rgb(103,0,31)";
}
