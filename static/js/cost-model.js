/**
 * The cost model's formulas for display (the numbers come from the ranks; see workers/cost_model.py):
 * nccl-tests' bus-bandwidth factors and the α–β model's time for each collective, and units.
 */

/** busbw = algbw × factor: {text, value} for `op` on n ranks. */
export function busFactor(op, n) {
  if (op === "all_reduce") return { text: "2(n−1)/n", value: (2 * (n - 1)) / n };
  if (["all_gather", "reduce_scatter", "all_to_all", "scatter", "gather"].includes(op)) return { text: "(n−1)/n", value: (n - 1) / n };
  return { text: "1", value: 1 };
}

/** The α–β model of `op` on p ranks moving m bytes: {general, here} as text. */
export function modelFormula(op, p) {
  const steps = p > 1 ? Math.max(Math.ceil(Math.log2(p)), 1) : 0;
  const gcd = (a, b) => (b ? gcd(b, a % b) : a);
  const frac = (a, b) => (Number.isInteger(a / b) ? String(a / b) : `${a / gcd(a, b)}/${b / gcd(a, b)}`);
  switch (op) {
    case "all_reduce":
      return { name: "ring all-reduce", general: "2(p−1)·α + 2(p−1)/p · m·β", here: `${2 * (p - 1)}·α + ${frac(2 * (p - 1), p)} · m·β` };
    case "all_gather": case "reduce_scatter": case "all_to_all": case "scatter": case "gather":
      return { name: `ring ${op.replace(/_/g, "-")}`, general: "(p−1)·α + (p−1)/p · m·β", here: `${p - 1}·α + ${frac(p - 1, p)} · m·β` };
    case "broadcast": case "reduce":
      return { name: `tree ${op}`, general: "⌈log₂p⌉ · (α + m·β)", here: `${steps} · (α + m·β)` };
    case "barrier":
      return { name: "barrier", general: "⌈log₂p⌉ · α", here: `${steps}·α` };
    default:
      return { name: "send / recv", general: "α + m·β", here: "α + m·β" };
  }
}

export function formatSeconds(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return "–";
  const a = Math.abs(s);
  if (a < 1e-3) return `${(s * 1e6).toPrecision(3)} µs`;
  if (a < 1) return `${(s * 1e3).toPrecision(3)} ms`;
  return `${s.toPrecision(3)} s`;
}

/** Bytes per second in decimal units, as nccl-tests prints GB/s. */
export function formatRate(bps) {
  if (bps === null || bps === undefined || !Number.isFinite(bps)) return "–";
  const units = [["GB/s", 1e9], ["MB/s", 1e6], ["kB/s", 1e3]];
  for (const [unit, scale] of units) if (bps >= scale) return `${(bps / scale).toPrecision(3)} ${unit}`;
  return `${bps.toPrecision(3)} B/s`;
}

/** 4 B, 2 KiB, 1 MiB. */
export function formatSize(bytes) {
  if (bytes >= 1 << 20 && bytes % (1 << 20) === 0) return `${bytes / (1 << 20)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${Number(bytes).toLocaleString("en-US")} B`;
}

/** Seconds the α–β model predicts for `op` on p ranks moving `bytes` (as workers/cost_model.py's predict). */
export function predictSeconds(op, p, bytes, alpha, beta) {
  const steps = p > 1 ? Math.max(Math.ceil(Math.log2(p)), 1) : 0;
  if (op === "all_reduce") return 2 * (p - 1) * alpha + ((2 * (p - 1)) / p) * bytes * beta;
  if (["all_gather", "reduce_scatter", "all_to_all", "scatter", "gather"].includes(op)) return (p - 1) * alpha + ((p - 1) / p) * bytes * beta;
  if (op === "broadcast" || op === "reduce") return steps * (alpha + bytes * beta);
  if (op === "barrier") return steps * alpha;
  return alpha + bytes * beta;
}
