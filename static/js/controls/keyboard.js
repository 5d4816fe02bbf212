/**
 * Keyboard first: Space or → next event, ← previous, Home first, End last. Keys typed into a form
 * field (text, number, select) are left alone.
 */

/** Whether a key pressed on `target` is typing into a form field (and so not a command). */
export function typing(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) return !["range", "radio", "checkbox", "button", "submit"].includes(target.type);
  return false;
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
    }[event.key];
    if (!action) return;
    // Radios keep their arrows (choosing the world size). Space always steps, even on a focused button:
    // in a lecture, a Space meant for "next" must never press Run again (Enter still presses buttons).
    if (event.target instanceof HTMLInputElement && event.target.type === "radio" && event.key.startsWith("Arrow")) return;
    event.preventDefault();
    action();
  });
}
