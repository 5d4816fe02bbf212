/**
 * Lecture rooms, the parts every page needs: open one as its presenter, and find one by its code.
 *
 * The presenter secret never travels in a query string (a follower could read it off the projector or a
 * shared link): the presenter's page gets it in the URL fragment (`/rooms/CODE#secret=…`), keeps it in
 * this tab's sessionStorage and takes it out of the address bar at once.
 */

import { t, tMessage, tText } from "paralab/i18n.js";
import { here } from "paralab/root.js";

export const CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/** "abcd-efgh", " ABCD EFGH " → "ABCDEFGH" (the server accepts both, as people type them). */
export function normaliseCode(text) {
  return String(text || "").replace(/[\s-]/g, "").toUpperCase();
}

/** "ABCDEFGH" → "ABCD-EFGH", as the projector shows it. */
export function displayCode(code) {
  return code.length === 8 ? `${code.slice(0, 4)}-${code.slice(4)}` : code;
}

const secretKey = (code) => `paralab:room-secret:${code}`;

export function savedSecret(code) {
  try {
    return sessionStorage.getItem(secretKey(code));
  } catch {
    return null;
  }
}

export function saveSecret(code, secret) {
  try {
    sessionStorage.setItem(secretKey(code), secret);
  } catch {
    /* the fragment still holds it for this load */
  }
}

/** A refusal in words from a failed response: its `detail`, or the status. */
async function refusal(response) {
  const body = await response.json().catch(() => ({}));
  return typeof body.detail === "string" ? tMessage(body) : t("the server answered {status}", response);
}

/**
 * Open a room and go to its presenter page. `lesson`, `worldSize`, `params`: what the presenter's form
 * starts from (the lesson page passes its own).
 */
export async function presentRoom({ lesson = null, worldSize = null, params = {} } = {}) {
  const response = await fetch(here("/api/rooms"), { method: "POST" });
  if (!response.ok) throw new Error(await refusal(response));
  const { code, secret } = await response.json();
  saveSecret(code, secret);
  const fragment = new URLSearchParams({ secret });
  if (lesson) fragment.set("lesson", lesson);
  if (worldSize) fragment.set("world_size", String(worldSize));
  for (const [k, v] of Object.entries(params)) fragment.set(k, String(v));
  location.assign(here(`/rooms/${code}#${fragment}`));
}

/** Whether room `code` exists: null if it does, else the refusal in words. */
export async function checkRoom(code) {
  if (!code) return t("Type the room code from the projector.");
  if (!/^[A-Z0-9]+$/.test(code)) return t("No room {code}: unknown or expired code", { code });
  const response = await fetch(here(`/api/rooms/${encodeURIComponent(code)}`));
  if (response.status === 404) return t("No room {code}: unknown or expired code", { code: displayCode(code) });
  if (!response.ok) return await refusal(response);
  return null;
}

/** The index's "Join a room" form: check the code, then go to the room (or say why not). */
export function bindJoinForm(form) {
  const input = form.querySelector('input[name="code"]');
  const error = form.querySelector(".join-error");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const code = normaliseCode(input.value);
    error.hidden = true;
    input.removeAttribute("aria-invalid");
    const problem = await checkRoom(code).catch((err) => t("could not reach the server: {error}", { error: err.message }));
    if (problem) {
      error.textContent = problem;
      error.hidden = false;
      input.setAttribute("aria-invalid", "true");
      input.focus();
      return;
    }
    location.assign(here(`/rooms/${code}`));
  });
}

/** The "Lecture room" box (index, missing-room page): join by code, or start presenting. */
export function bindRoomEntry(section) {
  bindJoinForm(section.querySelector(".join-form"));
  const button = section.querySelector('[data-action="present-room"]');
  button?.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await presentRoom();
    } catch (err) {
      button.textContent = tText(err.message);
      button.disabled = false;
    }
  });
}
