/** A−/A+: scales all text (and the drawings, which are sized in rem) for projectors; remembered. */

const KEY = "paralab:text-scale";
export const SCALES = [0.8, 0.9, 1, 1.15, 1.3, 1.5, 1.75, 2];

export function currentScale() {
  const saved = Number(localStorage.getItem(KEY));
  return SCALES.includes(saved) ? saved : 1;
}

export const LARGE_TEXT = 1.5;      // from here on a lesson page scrolls as one (paralab.css: data-large-text)

function apply(scale) {
  document.documentElement.style.setProperty("--text-scale", String(scale));
  document.documentElement.toggleAttribute("data-large-text", scale >= LARGE_TEXT);
}

/** Wire the buttons inside `root`; `onChange(scale)` redraws what depends on the size. */
export function bindTextSize(root, onChange = () => {}) {
  const smaller = root.querySelector('[data-action="text-smaller"]');
  const larger = root.querySelector('[data-action="text-larger"]');
  const out = root.querySelector(".text-scale");
  function set(scale) {
    apply(scale);
    try {
      localStorage.setItem(KEY, String(scale));
    } catch {
      /* private mode: the size still applies to this page */
    }
    smaller.disabled = scale === SCALES[0];
    larger.disabled = scale === SCALES[SCALES.length - 1];
    if (out) out.textContent = `${Math.round(scale * 100)}%`;
    onChange(scale);
  }
  const step = (d) => set(SCALES[Math.max(0, Math.min(SCALES.length - 1, SCALES.indexOf(currentScale()) + d))]);
  smaller.addEventListener("click", () => step(-1));
  larger.addEventListener("click", () => step(1));
  set(currentScale());
}
