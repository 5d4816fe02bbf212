/**
 * Driving a step-mode run: release one rank, release all, continue, pause — from the stepper's
 * buttons or the keyboard (0–9 release that rank, a or Enter release all, c continue, p pause).
 * Each sends a control message on the run's websocket and puts the cursor on the live end, so the
 * pictures follow what the ranks do next. A request the page already knows to be useless (a rank
 * that is not at a gate) is answered here, without asking the server.
 */

import { typing } from "paralab/controls/keyboard.js";
import { t } from "paralab/i18n.js";

/**
 * `store`: the event store; `connection()`: the run's connection (or null); `live()`: the state at the
 * end of the log; `onChange()`: redraw (the notice or the mode changed).
 */
export function createStepper({ store, connection, live, onChange }) {
  let stepping = true;      // ranks stop at each call (after "continue": false until "pause")
  let notice = null;
  let noticeTimer = null;

  function say(text) {
    notice = text;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => {
      notice = null;
      onChange();
    }, 4000);
    onChange();
  }

  function active() {
    const run = store.state.run;
    return Boolean(run && run.step && !store.state.final);
  }

  function send(message) {
    const conn = connection();
    if (!conn || !conn.send(message)) {
      say(t("Not connected to the run right now; try again in a moment."));
      return false;
    }
    store.last();           // follow the live end: the next pictures are what this release causes
    return true;
  }

  const actions = {
    release(rank) {
      const rs = live().ranks[rank];
      if (!rs) return say(t("There is no rank {rank} in this run.", { rank }));
      const inside = rs.open.some((o) => o.kind !== "compute");
      if (!rs.gate) return say(t(inside ? "Rank {rank} is not waiting at a gate: it is inside a call." : "Rank {rank} is not waiting at a gate.", { rank }));
      notice = null;
      send({ op: "step", rank });
    },
    releaseAll() {
      if (!live().ranks.some((rs) => rs.gate)) return say(t("No rank is waiting at a gate."));
      notice = null;
      send({ op: "step" });
    },
    resume() {
      if (send({ op: "continue" })) {
        stepping = false;
        onChange();
      }
    },
    pause() {
      if (send({ op: "pause" })) {
        stepping = true;
        onChange();
      }
    },
  };

  document.addEventListener("keydown", (event) => {
    if (!active() || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    const k = event.key;
    if (k === "Enter" && event.target instanceof Element && event.target.closest("button, a, summary, input")) return;   // Enter presses what has focus
    if (/^[0-9]$/.test(k)) actions.release(Number(k));
    else if (k === "a" || k === "A" || k === "Enter") actions.releaseAll();
    else if (k === "c" || k === "C") actions.resume();
    else if (k === "p" || k === "P") actions.pause();
    else return;
    event.preventDefault();
  });

  return {
    actions,
    get stepping() {
      return stepping;
    },
    get notice() {
      return notice;
    },
    /** A refusal from the server (e.g. "rank 2 is not waiting at a gate"). */
    say,
    /** A new run starts stepping again. */
    reset() {
      stepping = true;
      notice = null;
    },
  };
}
