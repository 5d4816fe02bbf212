/**
 * Units for the cost model's numbers: seconds, rates, sizes. The model itself — nccl-tests' factors, the
 * α–β formulas and predictions — lives in workers/cost_model.py alone; the page reads what the events say.
 */

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
