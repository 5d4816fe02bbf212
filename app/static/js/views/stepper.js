/**
 * The stepper panel of a step-mode run: per rank, whether it waits at a gate before a call (which
 * call, its label, its source line), is blocked inside a collective until named peers arrive, is
 * running between calls, or has finished; and the buttons (with their keys) that release one rank,
 * all of them, run on to the end or pause again.
 *
 * A live run shows the ranks as they are now (the end of the log: what the buttons act on); a run
 * that has ended shows them at the cursor, so stepping back through a recorded run shows the gates.
 */

import { changed, fill, h } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { afterColon, t, tMessage, tPlural, tText } from "paralab/i18n.js";
import { callName, collectiveKey, parseSite, rankList } from "paralab/replay.js";

function where(site) {
  const s = parseSite(site);
  return s ? `${s.path.split("/").pop()}:${s.line}` : null;
}

/** Where one rank stands, for the stepper: {kind, text, detail, site, waiting}. */
export function rankStep(rs, state) {
  if (rs.error) return { kind: "error", text: t("raised {error}", { error: rs.error.message }) };
  if (state.final && (state.run.status === "done" || rs.finished)) return { kind: "finished", text: t("finished") };
  if (state.final) return { kind: "finished", text: t("stopped (run {status})", { status: t(state.run.status) }) };
  if (rs.finished) return { kind: "finished", text: t("finished"), detail: t("its program is done: it waits for the others") };
  if (rs.gate) {
    const label = rs.gate.label || "";
    return { kind: "gate", text: t("waits at {call}", { call: callName(rs.gate) }), detail: afterColon(tText(label)),
             site: where(rs.gate.site),
             waiting: true };
  }
  const calls = rs.open.filter((o) => o.kind !== "compute");
  const open = calls[calls.length - 1];
  if (open && open.kind === "collective") {
    const c = state.collectives.get(collectiveKey(open));
    const missing = c ? c.ranks.filter((r) => !c.begins.has(r)) : [];
    const site = where(open.begin?.site);
    if (missing.length) {
      return { kind: "blocked", text: t("blocked inside {call}", { call: callName(open) }),
               detail: t("waiting for {ranks} to enter it", { ranks: rankList(missing) }),
               site, missing, call: "collective" };
    }
    return { kind: "inside", text: t("inside {call}", { call: callName(open) }), detail: t("every member arrived: the data moves"), site };
  }
  if (open && open.kind === "p2p") {
    const peer = open.peer ?? "any rank";
    const wants = `waiting for a matching ${open.op === "send" ? "recv" : "send"} on ${typeof peer === "number" ? "rank {peer}" : "any rank"}`;
    return { kind: "blocked", text: t("blocked inside {call}", { call: callName(open) }), detail: t(wants, { peer }),
             site: where(open.begin?.site), missing: typeof peer === "number" ? [peer] : [], call: "p2p" };
  }
  if (!rs.last) return { kind: "idle", text: t(state.run.status === "queued" ? "queued" : "starting") };
  return { kind: "running", text: t("running"), detail: t("computing until its next call"), site: rs.site ? `${rs.site.path.split("/").pop()}:${rs.site.line}` : null };
}

const ICON = { gate: "❚❚", blocked: "◔", inside: "⇄", running: "▶", finished: "■", error: "✗", idle: "·" };

function key(k) {
  return h("kbd", {}, k);
}

/** The sentence at the top: what the ranks are doing, and what a collective is. */
function summary(rows) {
  const gates = rows.filter((r) => r.step.kind === "gate").map((r) => r.rank);
  const blocked = rows.filter((r) => r.step.kind === "blocked");
  const parts = [];
  if (gates.length) parts.push(tPlural(gates.length, "{ranks} waits at a gate", "{ranks} wait at a gate", { ranks: rankList(gates) }));
  for (const b of blocked) {
    const missing = b.step.missing || [];
    const vars = { rank: b.rank, what: b.step.text, ranks: rankList(missing), detail: b.step.detail };
    parts.push(b.step.call === "collective"
      ? tPlural(missing.length, "rank {rank} is {what} until {ranks} enters", "rank {rank} is {what} until {ranks} enter", vars)
      : t("rank {rank} is {what}, {detail}", vars));
  }
  if (blocked.some((b) => b.step.call === "collective")) parts[parts.length - 1] += t(" — a collective is a rendezvous");
  if (!parts.length) {
    if (rows.every((r) => r.step.kind === "finished")) return "Every rank has finished.";
    if (rows.every((r) => r.step.kind === "inside" || r.step.kind === "finished")) return "Every member has arrived: the data moves.";
    if (rows.some((r) => r.step.kind === "running" || r.step.kind === "inside")) return "The ranks are running to their next call.";
    return "Waiting for the ranks to reach their first call.";
  }
  return t("{parts}.", { parts: parts.join(t("; ")) });
}

/**
 * `state`: the state to show (live or at the cursor); `ctx`: {live, stepping, notice, behind, actions}
 * where actions = {release(rank), releaseAll(), resume(), pause()}.
 */
export function renderStepper(container, state, ctx) {
  const rows = state.ranks.map((rs) => ({ rank: rs.rank, step: rankStep(rs, state) }));
  const keyText = JSON.stringify([rows, ctx.live, ctx.stepping, ctx.notice, ctx.behind, ctx.canSend]);
  if (!changed(container, keyText)) return;
  const focused = container.contains(document.activeElement) ? document.activeElement.dataset.action : null;
  const { actions } = ctx;
  const anyWaiting = rows.some((r) => r.step.kind === "gate");
  const disabled = !ctx.live || !ctx.canSend;
  if (!ctx.live && state.final) {          // a recorded run at its end: one line, the rest is replay
    fill(container, h("div", { class: "stepper-head" }, h("h2", { id: "h-stepper" }, "Step mode"),
      h("span", { class: "stepper-mode ended" }, "This run was stepped by hand and has ended. Step back with ",
        key("←"), " to see, at each event, which rank waited at which call.")));
    if (focused) container.querySelector(`[data-action="${focused}"]`)?.focus();
    return;
  }
  fill(container,
    h("div", { class: "stepper-head" },
      h("h2", { id: "h-stepper" }, "Step mode"),
      h("span", { class: ["stepper-mode", ctx.live ? (ctx.stepping ? "stepping" : "running") : "ended"] },
        !ctx.live ? "the run has ended: this is where the ranks were at this step"
          : ctx.stepping ? "every rank stops before each collective and send/recv" : "running on without stopping (p pauses again)"),
      !ctx.live ? null : h("div", { class: "stepper-buttons" },
        h("button", { type: "button", class: "primary", "data-action": "release-all", disabled: disabled || !anyWaiting,
                      onclick: () => actions.releaseAll() }, "Release all ", key("a")),
        h("button", { type: "button", "data-action": "continue", disabled: disabled || !ctx.stepping, onclick: () => actions.resume() },
          "Continue ", key("c")),
        h("button", { type: "button", "data-action": "pause", disabled: disabled || ctx.stepping, onclick: () => actions.pause() },
          "Pause ", key("p")))),
    h("p", { class: "stepper-summary", role: "status" }, summary(rows)),
    ctx.behind ? h("p", { class: "stepper-behind" }, `${t("These are the ranks now; the pictures below show seq {seq} of {total}.", ctx.behind)} `,
      key("End"), " catches up.") : null,
    h("ol", { class: "stepper-ranks" }, rows.map(({ rank, step }) =>
      h("li", { class: ["stepper-rank", `is-${step.kind}`], "data-rank": rank, style: { "--rank": rankColour(rank) } },
        h("span", { class: "rank-chip" }, `rank ${rank}`),
        h("span", { class: "stepper-icon", "aria-hidden": "true" }, ICON[step.kind] || "·"),
        h("span", { class: "stepper-what", title: [step.text, step.site, step.detail].filter(Boolean).join(" · ") },
          h("span", { class: "stepper-text" }, step.text),
          step.site ? h("code", { class: "stepper-site" }, step.site) : null,
          step.detail ? h("span", { class: "stepper-detail" }, step.detail) : null),
        !ctx.live ? null : h("button", { type: "button", class: "release", "data-action": `release-${rank}`,
                      disabled: disabled || step.kind !== "gate", onclick: () => actions.release(rank),
                      title: t(rank < 10 ? "release rank {rank} (key {rank})" : "release rank {rank}", { rank }) },   // named by what it shows
          "release ", rank < 10 ? key(String(rank)) : `rank ${rank}`)))),
    !ctx.live ? null : h("p", { class: "stepper-keys" },
      key("0"), "–", key("9"), " release that rank · ", key("a"), " or ", key("Enter"), " release all · ",
      key("c"), " continue · ", key("p"), " pause · ", key("←"), key("→"), " step through what happened"),
    ctx.notice ? h("p", { class: "stepper-notice", role: "alert" }, tMessage(ctx.notice)) : null);
  if (focused) container.querySelector(`[data-action="${focused}"]`)?.focus();
}
