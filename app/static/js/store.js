/**
 * The store: one run's ordered event log and a cursor into it, and the playback flags.
 *
 * Views draw the state at `log[0..cursor]` (see replay.js), so stepping back shows exactly what
 * stepping forward showed. Controls only call the actions below. Named changes:
 *   "run"      a new run was loaded (the log is empty again)
 *   "log"      events were appended
 *   "cursor"   the cursor moved
 *   "playback" playing / speed / follow changed
 */

import { FINAL_STATUSES, emptyContents, noteEvent } from "paralab/log-contents.js";

export { FINAL_STATUSES };
export const BASE_EVENTS_PER_SECOND = 4;
export const BASE_CALLS_PER_SECOND = 2;
const AUTO_BY_CALL_EVENTS = 500;   // "auto" plays a run of more events than this call by call

/** What a tick of Play moves by now: "call" or "event" (the choice, or for "auto", by the run's size). */
export function playUnit(state) {
  if (state.playBy !== "auto") return state.playBy;
  return state.log.length > AUTO_BY_CALL_EVENTS ? "call" : "event";
}

/** A collective or send/recv starting. */
export const isCall = (e) => (e.kind === "collective" || e.kind === "p2p") && e.phase === "begin";

/** A call starting that no rank started before: a send, or a collective's first member's begin (its first
 *  rank in the group). What Play "per call" moves by: a pipeline run has ten times fewer of them than events. */
export const startsCall = (e) => isCall(e) && (e.kind === "p2p" ? e.op === "send" : e.rank === (e.ranks?.length ? e.ranks[0] : 0));

export function createStore() {
  const listeners = new Map();
  const state = {
    run: null,          // the run's description from the API: {id, lesson, world_size, params, …}
    log: [],            // events in seq order, seq N at index N-1
    cursor: -1,         // index of the event the views show; -1 when the log is empty
    follow: true,       // at the end of a live run, move with new events
    held: false,        // the viewer paused: do not follow
    playing: false,     // advance one event per tick
    speed: 1,           // × BASE_EVENTS_PER_SECOND, or × BASE_CALLS_PER_SECOND
    playBy: "auto",     // what a tick of Play moves by: "call" (to the next call started), "event", or "auto" (playUnit)
    final: false,       // the log holds the run's final status
    pendingSeq: null,   // a seq asked for before it arrived (a shared URL)
    contents: emptyContents(),   // what the whole log holds (log-contents.js): which panels the page shows
  };

  function emit(name) {
    for (const fn of listeners.get(name) || []) fn(state);
  }

  function atEnd() {
    return state.cursor === state.log.length - 1;
  }

  function moveTo(index) {
    const last = state.log.length - 1;
    const next = last < 0 ? -1 : Math.max(0, Math.min(index, last));
    const moved = next !== state.cursor;
    state.cursor = next;
    const follow = atEnd() && !state.held;
    const followChanged = follow !== state.follow;
    state.follow = follow;
    if (moved) emit("cursor");
    if (followChanged) emit("playback");
  }

  return {
    get state() {
      return state;
    },

    /** Listen to a named change; returns the function that stops listening. */
    on(name, fn) {
      if (!listeners.has(name)) listeners.set(name, new Set());
      listeners.get(name).add(fn);
      return () => listeners.get(name).delete(fn);
    },

    /** Start over with a new run (its events come through `append`). */
    load(run, { seq = null } = {}) {
      Object.assign(state, {
        run, log: [], cursor: -1, follow: seq === null, held: seq !== null, playing: false,
        final: false, pendingSeq: seq, contents: emptyContents(),
      });
      emit("run");
      emit("cursor");
      emit("playback");
    },

    /** Append events in seq order; anything already held is ignored. Returns how many were new. */
    append(events) {
      let added = 0;
      for (const event of events) {
        if (event.seq !== state.log.length + 1) continue;   // a duplicate, or out of order
        state.log.push(event);
        noteEvent(state.contents, event);
        added += 1;
        if (event.kind === "run" && FINAL_STATUSES.includes(event.status)) state.final = true;
      }
      if (!added) return 0;
      emit("log");
      if (state.pendingSeq !== null && state.pendingSeq <= state.log.length) {
        const seq = state.pendingSeq;
        state.pendingSeq = null;
        moveTo(seq - 1);
      } else if (state.pendingSeq !== null && state.final) {
        state.pendingSeq = null;         // asked for a seq the run never reached: show its end
        moveTo(state.log.length - 1);
      } else if (state.follow && !state.playing && state.pendingSeq === null) {
        moveTo(state.log.length - 1);
      }
      return added;
    },

    /** Put the cursor on log index `index` (clamped). */
    seek(index) {
      moveTo(index);
    },

    /** Put the cursor on the event numbered `seq`, now or as soon as it arrives. */
    seekSeq(seq) {
      if (seq <= state.log.length) moveTo(seq - 1);
      else state.pendingSeq = seq;
    },

    step(delta) {
      moveTo(state.cursor + delta);
    },

    first() {
      moveTo(0);
    },

    /** The last event, and follow the run from there. */
    last() {
      state.held = false;
      moveTo(state.log.length - 1);
    },

    play() {
      if (atEnd() && state.final) moveTo(0);   // replaying a finished run starts from its beginning
      state.held = false;
      state.playing = true;
      state.follow = false;
      emit("playback");
    },

    pause() {
      state.playing = false;
      state.held = true;
      state.follow = false;
      emit("playback");
    },

    /** One playback tick: the next event (or call), or stop at the end of a finished run. */
    tick() {
      if (!atEnd()) moveTo(playUnit(state) === "call" ? nextCallStart(state.log, state.cursor) : state.cursor + 1);
      else if (state.final) {
        state.playing = false;
        emit("playback");
      }
    },

    setSpeed(speed) {
      state.speed = speed;
      emit("playback");
    },

    /** Play by "call", by "event", or "auto". */
    setPlayBy(unit) {
      state.playBy = ["call", "event"].includes(unit) ? unit : "auto";
      emit("playback");
    },
  };
}

/** The index of the next call started after `cursor`, or the last event when no call follows. */
function nextCallStart(log, cursor) {
  for (let i = cursor + 1; i < log.length; i++) if (startsCall(log[i])) return i;
  return log.length - 1;
}
