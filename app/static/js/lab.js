/** The hosted lab's small pages: sign in / join a class, the signed-in user's menu (change the
 * password, sign out), and the admin page. The server's words (a refusal's `detail`) stay English in
 * the error and are put in the page's language where shown (`errorText`, `showWords`). */

import { h, fill } from "paralab/dom.js";
import { currentLang, t, tMessage } from "paralab/i18n.js";
import { here } from "paralab/root.js";

/** The messages of a refusal's body: a 422's [{msg, type, params}], or the body ({detail, code, params}),
 *  or the bare status. */
function detailMessages(body, status) {
  if (Array.isArray(body?.detail)) return body.detail;
  return [typeof body?.detail === "string" && body.detail ? body : t("the server answered {status}", { status })];
}

export async function api(method, url, body) {
  const response = await fetch(here(url), {
    method, headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = response.headers.get("content-type")?.includes("json") ? await response.json() : await response.text();
  if (!response.ok) {
    const messages = detailMessages(data, response.status);
    const english = messages.map((m) => (typeof m === "string" ? m : m.msg ?? m.detail ?? "")).join("; ");
    throw Object.assign(new Error(english), { status: response.status, messages });
  }
  return data;
}

/** What went wrong, in the current language: each of the server's messages by its code (`tMessage`). */
export function errorText(error) {
  return (error.messages || [error.message]).map((message) => tMessage(message)).join(t("; "));
}

/** Elements whose text is built in the current language, and how: built again when it changes. */
const worded = new Map();
document.addEventListener("paralab:lang", () => {
  for (const [el, words] of worded) el.textContent = words();
});

/** Put `words()` (text made with t() or tMessage()) in `el`, now and after each change of language. */
export function showWords(el, words) {
  worded.set(el, words);
  el.textContent = words();
}

/** A time of day in the page's language: 14:03:07, not 2:03:07 PM, in Chinese. */
export const clock = (seconds) => new Date(seconds * 1000).toLocaleTimeString(currentLang() === "en" ? undefined : document.documentElement.lang);

function showError(form, error) {
  const p = form.querySelector(".lab-error");
  showWords(p, () => (error ? errorText(error) : ""));
  p.hidden = !error;
}

/** A sign-in or sign-up form: on success, on to ?next= (or the problems). */
export function bindSignIn(form, url) {
  if (!form) return;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = Object.fromEntries(new FormData(form));
    try {
      await api("POST", url, body);
      const next = new URLSearchParams(location.search).get("next");
      location.assign(here(next && next.startsWith("/") && !next.startsWith("//") ? next : "/problems"));
    } catch (error) {
      showError(form, error);
    }
  });
}

export function bindSignOut() {
  document.querySelector('[data-action="sign-out"]')?.addEventListener("click", async () => {
    await api("POST", "/api/auth/logout");
    forgetLearner();
    location.assign(here("/login"));
  });
}

/** What this browser kept of the learner who signs out — their drafts and progress — goes: on a lab's
 * shared machine the next learner must see none of it. */
export function forgetLearner() {
  try {
    const kept = Array.from({ length: localStorage.length }, (_, i) => localStorage.key(i));
    for (const key of kept) if (/^paralab:(draft:|progress)/.test(key)) localStorage.removeItem(key);
  } catch { /* private mode: nothing kept */ }
}

/** The top bar's user menu: sign out, and the form that changes your password. */
export function bindUserMenu() {
  bindSignOut();
  const form = document.querySelector("#change-password");
  if (!form) return;
  const done = form.querySelector(".lab-done");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    done.hidden = true;
    try {
      await api("POST", "/api/auth/password", Object.fromEntries(new FormData(form)));
      form.reset();
      showError(form, null);
      done.hidden = false;
    } catch (error) {
      showError(form, error);
    }
  });
}

/** A name (of a user, a class, a lesson, a problem): never translated, even when it is "admin". */
const named = (text) => h("td", { translate: "no" }, text);
const since = (status, seconds) => t("{status} since {time}", { status: t(status), time: clock(seconds) });

export function startAdminPage(root) {
  const body = (id) => root.querySelector(`#${id} tbody`);
  const nothing = (text) => [h("tr", {}, h("td", { colspan: "5" }, text))];
  const runRow = (run) => h("tr", { "data-run": run.id },
    named(run.owner || "—"), named(run.lesson), h("td", {}, String(run.world_size)), h("td", {}, since(run.status, run.created_at)),
    h("td", {}, h("button", { type: "button", onclick: () => api("DELETE", `/api/runs/${run.id}`).then(refresh) }, "Cancel")));
  const submissionRow = (s) => h("tr", { "data-submission": s.id },
    h("td", {}, s.position ? String(s.position) : t("judging")), named(s.user), named(s.problem),
    h("td", {}, since(s.status, s.created_at)),
    h("td", {}, h("button", { type: "button",
      onclick: () => api("POST", `/api/admin/submissions/${s.id}/cancel`).catch(say).then(refresh) }, "Cancel")));
  const classRow = (c) => h("tr", {},
    named(c.name), h("td", {}, h("code", {}, c.code)), h("td", {}, String(c.students)),
    h("td", {}, h("a", { href: here(`/api/admin/results.csv?class=${encodeURIComponent(c.name)}`), download: "" }, "CSV")));
  const userRow = (u) => h("tr", { "data-user": u.name },
    named(u.name), h("td", {}, t(u.role)), named(u.class || "—"),
    h("td", {}, h("button", { type: "button", "data-action": "reset-password", onclick: () => resetPassword(u.name) }, "Reset password"),
      u.name === me ? null : h("button", { type: "button", "data-action": "delete-user", onclick: () => deleteUser(u.name) }, "Delete")));
  let unreachable = false;
  async function refresh() {
    let activity, classes, users;
    try {
      [activity, classes, users] = await Promise.all([
        api("GET", "/api/admin/activity"), api("GET", "/api/admin/classes"), api("GET", "/api/admin/users")]);
    } catch (error) {                                // the server is restarting, or gone: say so, keep trying
      unreachable = true;
      if (error.status) say(error);
      else showWords(status, () => t("The server cannot be reached; trying again every 3 s."));
      return;
    }
    if (unreachable) {
      unreachable = false;
      say(null);
    }
    fill(body("runs"), ...(activity.runs.length ? activity.runs.map(runRow) : nothing("No run in flight.")));
    fill(body("submissions"), ...(activity.submissions.length ? activity.submissions.map(submissionRow) : nothing("No submission waiting.")));
    fill(body("classes"), ...(classes.length ? classes.map(classRow) : nothing("No class yet: create one below, then give its students the sign-up code.")));
    fill(body("users"), ...users.map(userRow));
  }
  const me = document.querySelector(".lab-user[data-user]")?.dataset.user;
  const status = root.querySelector("#admin-status");
  function say(error) {
    showWords(status, () => (error ? errorText(error) : ""));
  }
  async function resetPassword(name) {
    const password = prompt(t("New password for {name} (8 characters or more)", { name }));
    if (!password) return;
    try {
      await api("POST", `/api/admin/users/${encodeURIComponent(name)}/password`, { password });
      showWords(status, () => t("The password of {name} is reset; their sessions have ended.", { name }));
    } catch (error) {
      say(error);
    }
  }
  async function deleteUser(name) {
    if (!confirm(t("Delete {name} with all of their submissions and runs?", { name }))) return;
    try {
      await api("DELETE", `/api/admin/users/${encodeURIComponent(name)}`);
      showWords(status, () => t("{name} is deleted.", { name }));
    } catch (error) {
      say(error);
    }
    refresh();
  }
  for (const [id, url] of [["new-class", "/api/admin/classes"], ["new-user", "/api/admin/users"]]) {
    const form = root.querySelector(`#${id}`);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const data = Object.fromEntries(new FormData(form));
      if (data.class === "") delete data.class;
      try {
        await api("POST", url, data);
        form.reset();
        showError(form, null);
        refresh();
      } catch (error) {
        showError(form, error);
      }
    });
  }
  root.querySelector('[data-action="refresh"]').addEventListener("click", refresh);
  document.addEventListener("paralab:lang", refresh);
  refresh();
  setInterval(() => { if (!document.hidden) refresh(); }, 3000);
}
