/**
 * The URL reproduces what is on screen: `/lessons/tp_mlp?world_size=4&ffn=64&run=<id>&seq=42`.
 * Read once when the page loads; rewritten with history.replaceState (throttled) as things change.
 */

const RESERVED = new Set(["run", "seq", "world_size"]);

/** {runId, seq, worldSize, params} from the address bar; params stay strings (the form types them). */
export function readLocation(search = location.search) {
  const query = new URLSearchParams(search);
  const params = {};
  for (const [key, value] of query) if (!RESERVED.has(key)) params[key] = value;
  const seq = Number(query.get("seq"));
  return {
    runId: query.get("run"),
    seq: Number.isInteger(seq) && seq > 0 ? seq : null,
    worldSize: query.get("world_size") ? Number(query.get("world_size")) : null,
    params,
  };
}

export function locationFor({ worldSize, params, runId, seq }) {
  const query = new URLSearchParams();
  if (worldSize) query.set("world_size", String(worldSize));
  for (const [key, value] of Object.entries(params || {})) if (value !== null && value !== undefined) query.set(key, String(value));
  if (runId) query.set("run", runId);
  if (runId && seq) query.set("seq", String(seq));
  return `${location.pathname}?${query}`;
}

/** A writer that replaces the URL at most every `ms` milliseconds, always ending on the latest. */
export function urlWriter(ms = 250) {
  let timer = null;
  let latest = null;
  let lastWrite = 0;
  function write() {
    timer = null;
    lastWrite = Date.now();
    if (latest !== location.pathname + location.search) history.replaceState(history.state, "", latest);
  }
  return (state) => {
    latest = locationFor(state);
    if (timer) return;
    const wait = Math.max(0, ms - (Date.now() - lastWrite));
    timer = setTimeout(write, wait);
  };
}
