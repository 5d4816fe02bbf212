/**
 * Follow-the-event scrolling: when the viewer steps (the step keys, or the scrubber's step buttons) to
 * an event that changes a picture scrolled out of view, that picture scrolls into view. Play, the
 * slider and a room's page following its presenter move the cursor without it — a page that jumps on
 * every event of a Play cannot be read — and so does the focus view, which shows one picture already.
 * In step mode, a release (its keys or the stepper's buttons) brings the stepper's ranks into view.
 * Smooth, unless the viewer prefers reduced motion.
 */

const STEP_KEYS = new Set([" ", "ArrowRight", "ArrowLeft", "Home", "End", "]", "[", "}", "{"]);
const STEP_BUTTONS = ["first", "prev", "next", "last"].map((name) => `#scrubber [data-action="${name}"]`).join(", ");

/** The pictures an event of each kind changes, by view id (views/registry.js): the first one shown. */
const PICTURES_OF = {
  collective: ["collective", "shards"],
  p2p: ["ring", "origins"],
  tensor: ["origins", "tensors"],
  check: ["checks"],
};

/** The picture (a panel's `div[id]`) `event` changes, if the page shows one. */
function pictureOf(event) {
  for (const id of PICTURES_OF[event?.kind] || []) {
    const picture = document.getElementById(id);
    if (picture && !picture.closest(".panel")?.hidden) return picture;
  }
  return null;
}

/** Whether most of `picture` is on screen: inside the stage's scroll box, the window, above the scrubber. */
function inView(picture) {
  const box = picture.getBoundingClientRect();
  const stage = picture.closest(".stage")?.getBoundingClientRect();
  const scrubber = document.getElementById("scrubber")?.getBoundingClientRect();
  const top = Math.max(stage?.top ?? 0, 0);
  const bottom = Math.min(stage?.bottom ?? innerHeight, innerHeight, scrubber?.height ? scrubber.top : innerHeight);
  const shown = Math.min(box.bottom, bottom) - Math.max(box.top, top);
  return shown >= Math.min(box.height, bottom - top) * 0.6;
}

/** Centre `picture` (or, if it is too tall, its drawing) in what the stage shows — the window, when the page
 * scrolls as one — clear of a fixed scrubber. */
function reveal(picture) {
  const reduce = window.matchMedia?.("(prefers-reduced-motion: reduce)").matches;
  const stage = picture.closest(".stage");
  const scrubber = document.getElementById("scrubber");
  const covering = scrubber && getComputedStyle(scrubber).position === "fixed" ? scrubber.offsetHeight : 0;
  const scrolls = stage && stage.scrollHeight > stage.clientHeight + 1;
  const room = (scrolls ? stage.clientHeight : innerHeight) - covering;
  const fits = (el) => el && el.getBoundingClientRect().height <= room;
  const drawing = picture.querySelector("svg, canvas");
  const target = !fits(picture) && fits(drawing) ? drawing : picture;     // large text: the drawing, its captions aside
  target.style.scrollMarginBottom = `${covering}px`;
  target.scrollIntoView({ block: fits(target) ? "center" : "start", behavior: reduce ? "auto" : "smooth" });
}

/** After a step of the viewer's own, bring the picture its event changes into view (once drawn). */
export function bindFollowEvent(store) {
  let stepping = false;
  const mark = () => {
    stepping = true;
    setTimeout(() => { stepping = false; });
  };
  document.addEventListener("keydown", (event) => { if (STEP_KEYS.has(event.key)) mark(); }, { capture: true });
  document.addEventListener("click", (event) => { if (event.target instanceof Element && event.target.closest(STEP_BUTTONS)) mark(); },
                            { capture: true });
  document.addEventListener("keydown", (event) => {                // step mode: releasing ranks shows them
    if (STEPPER_KEYS.test(event.key) && !event.ctrlKey && !event.metaKey && !event.altKey && !typingInto(event.target)) revealRanks();
  });
  document.addEventListener("click", (event) => {
    if (event.target instanceof Element && event.target.closest("#stepper button")) revealRanks();
  });
  store.on("cursor", () => {
    if (!stepping || store.state.playing || document.body.classList.contains("focus-view")) return;
    const { log, cursor } = store.state;
    revealWhenDrawn(() => store.state.cursor === cursor && pictureOf(log[cursor]));
  });
}

const MAX_FRAMES = 60;
const STEPPER_KEYS = /^([0-9aAcCpP]|Enter)$/;
const typingInto = (target) => target instanceof Element && target.matches("input:not([type=range]):not([type=checkbox]), select, textarea");

/** The stepper's ranks (a step-mode run), after a release: the rank to release next must not be cut off. */
function revealRanks() {
  if (!document.body.classList.contains("step-run") || document.body.classList.contains("focus-view")) return;
  revealWhenDrawn(() => document.querySelector("#stepper:not([hidden]) .stepper-ranks"));
}

/** Once the step's drawing is done (a panel off screen is drawn late: `data-stale`), reveal the picture
 * `current()` names if it is out of view; nothing if the cursor moved on meanwhile. */
function revealWhenDrawn(current, frames = MAX_FRAMES) {
  requestAnimationFrame(() => requestAnimationFrame(() => {
    const picture = current();
    if (!picture) return;
    const panel = picture.closest(".panel");
    if (panel?.dataset.stale !== undefined && frames > 0) revealWhenDrawn(current, frames - 1);
    else if (!inView(picture)) reveal(picture);
  }));
}
