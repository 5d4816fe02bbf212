/**
 * How long each part of the page's last drawing took, in milliseconds: the fold, each panel drawn in
 * the frame, the tables. bench/scrub_speed.py reads them (window.paralab.timings) to say which view a
 * slow step spent its time in. A part drawn later, when the browser is idle, is not counted.
 */

export const timings = new Map();

/** `fn()`, its time added to `name`'s. */
export function timed(name, fn) {
  const start = performance.now();
  try {
    return fn();
  } finally {
    timings.set(name, (timings.get(name) || 0) + performance.now() - start);
  }
}

/** A new drawing starts: forget the last one's times. */
export function startTimings() {
  timings.clear();
}
