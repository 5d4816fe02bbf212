/**
 * Keyboard first: Space or → next event, ← previous, Home first, End last; ] and [ the next and
 * previous collective or send/recv, } and { the next and previous microbatch — long runs are crossed
 * call by call, not event by event. Keys typed into a form field (text, number, select) are left alone,
 * and so are ← and → on a box that scrolls sideways (a wide table with the focus): they scroll it.
 */

import { isCall } from "paralab/store.js";

/** A computation starting on another microbatch than the one at the cursor's. */
const microbatchOf = (log, index) => {
  for (let i = index; i >= 0; i--) if (Number.isInteger(log[i].microbatch)) return log[i].microbatch;
  return null;
};

/** Move the cursor to the nearest event past it, in `direction` (±1), that `matches`; stay if none. */
export function jump(store, direction, matches) {
  const { log, cursor } = store.state;
  for (let i = cursor + direction; i >= 0 && i < log.length; i += direction) {
    if (matches(log[i], i)) return store.seek(i);
  }
}

/** Whether a key pressed on `target` is typing into a form field (and so not a command). */
export function typing(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) return !["range", "radio", "checkbox", "button", "submit"].includes(target.type);
  return false;
}

/** Whether `target` is a box that scrolls sideways now: the browser's own ← and → scroll it. */
export function scrollsSideways(target) {
  return target instanceof HTMLElement && target.scrollWidth > target.clientWidth + 1
    && ["auto", "scroll"].includes(getComputedStyle(target).overflowX);
}

export function bindKeyboard(store) {
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    const action = {
      " ": () => store.step(1),
      ArrowRight: () => store.step(1),
      ArrowLeft: () => store.step(-1),
      Home: () => store.first(),
      End: () => store.last(),
      "]": () => jump(store, 1, isCall),
      "[": () => jump(store, -1, isCall),
      "}": () => jumpMicrobatch(store, 1),
      "{": () => jumpMicrobatch(store, -1),
    }[event.key];
    if (!action) return;
    // Radios keep their arrows (choosing the world size). Space always steps, even on a focused button:
    // in a lecture, a Space meant for "next" must never press Run again (Enter still presses buttons).
    if (event.target instanceof HTMLInputElement && event.target.type === "radio" && event.key.startsWith("Arrow")) return;
    if (event.key.startsWith("Arrow") && scrollsSideways(event.target)) return;
    event.preventDefault();
    action();
  });
}

function jumpMicrobatch(store, direction) {
  const { log, cursor } = store.state;
  const here = microbatchOf(log, cursor);
  jump(store, direction, (e) => e.kind === "compute" && e.phase === "begin" && Number.isInteger(e.microbatch)
    && e.microbatch !== here);
}
