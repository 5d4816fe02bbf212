/** The hosted lab's small pages: sign in / join a class, the signed-in user's menu (change the
 * password, sign out), and the admin page. */

import { h, fill } from "paralab/dom.js";
import { t } from "paralab/i18n.js";

export async function api(method, url, body) {
  const response = await fetch(url, {
    method, headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = response.headers.get("content-type")?.includes("json") ? await response.json() : await response.text();
  if (!response.ok) {
    const detail = data?.detail;
    const text = Array.isArray(detail) ? detail.map((d) => d.msg).join("; ") : detail || `${response.status}`;
    throw Object.assign(new Error(text), { status: response.status });
  }
  return data;
}

function showError(form, error) {
  const p = form.querySelector(".lab-error");
  p.textContent = error ? error.message : "";
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
      location.assign(next && next.startsWith("/") && !next.startsWith("//") ? next : "/problems");
    } catch (error) {
      showError(form, error);
    }
  });
}

export function bindSignOut() {
  document.querySelector('[data-action="sign-out"]')?.addEventListener("click", async () => {
    await api("POST", "/api/auth/logout");
    location.assign("/login");
  });
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

const when = (t) => new Date(t * 1000).toLocaleTimeString();

export function startAdminPage(root) {
  const body = (id) => root.querySelector(`#${id} tbody`);
  async function refresh() {
    const [activity, classes, users] = await Promise.all([
      api("GET", "/api/admin/activity"), api("GET", "/api/admin/classes"), api("GET", "/api/admin/users")]);
    fill(body("runs"), ...(activity.runs.length ? activity.runs.map((run) => h("tr", { "data-run": run.id },
      h("td", {}, run.owner || "—"), h("td", {}, run.lesson), h("td", {}, String(run.world_size)),
      h("td", {}, `${run.status} since ${when(run.created_at)}`),
      h("td", {}, h("button", { type: "button", onclick: () => api("DELETE", `/api/runs/${run.id}`).then(refresh) }, "Cancel"))))
      : [h("tr", {}, h("td", { colspan: "5" }, "No run in flight."))]));
    fill(body("submissions"), ...(activity.submissions.length ? activity.submissions.map((s) => h("tr", { "data-submission": s.id },
      h("td", {}, s.position ? String(s.position) : "judging"), h("td", {}, s.user), h("td", {}, s.problem),
      h("td", {}, `${s.status} since ${when(s.created_at)}`),
      h("td", {}, h("button", { type: "button",
        onclick: () => api("POST", `/api/admin/submissions/${s.id}/cancel`).catch(say).then(refresh) }, "Cancel"))))
      : [h("tr", {}, h("td", { colspan: "5" }, "No submission waiting."))]));
    fill(body("classes"), ...classes.map((c) => h("tr", {},
      h("td", {}, c.name), h("td", {}, h("code", {}, c.code)), h("td", {}, String(c.students)),
      h("td", {}, h("a", { href: `/api/admin/results.csv?class=${encodeURIComponent(c.name)}`, download: "" }, "CSV")))));
    fill(body("users"), ...users.map((u) => h("tr", { "data-user": u.name },
      h("td", {}, u.name), h("td", {}, u.role), h("td", {}, u.class || "—"),
      h("td", {}, h("button", { type: "button", "data-action": "reset-password", onclick: () => resetPassword(u.name) }, "Reset password"),
        u.name === me ? null : h("button", { type: "button", "data-action": "delete-user", onclick: () => deleteUser(u.name) }, "Delete")))));
  }
  const me = document.querySelector(".lab-user[data-user]")?.dataset.user;
  const status = root.querySelector("#admin-status");
  function say(error) {
    status.textContent = error ? error.message : "";
  }
  async function resetPassword(name) {
    const password = prompt(t("New password for {name} (8 characters or more)", { name }));
    if (!password) return;
    try {
      await api("POST", `/api/admin/users/${encodeURIComponent(name)}/password`, { password });
      status.textContent = t("The password of {name} is reset; their sessions have ended.", { name });
    } catch (error) {
      say(error);
    }
  }
  async function deleteUser(name) {
    if (!confirm(t("Delete {name} and all of their submissions?", { name }))) return;
    try {
      await api("DELETE", `/api/admin/users/${encodeURIComponent(name)}`);
      status.textContent = t("{name} is deleted.", { name });
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
  refresh();
  setInterval(() => { if (!document.hidden) refresh(); }, 3000);
}
