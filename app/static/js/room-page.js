/**
 * The lecture room page: the lesson page (lesson-page.js, its views, scrubber and keys), driven by the
 * room's socket instead of a run of its own.
 *
 * The room as the server describes it (its run, the presenter's cursor, its view, the follower count)
 * is mirrored in `room`, apart from what is on screen. The presenter's page shows that run, and sends
 * its cursor (`seek`), its lesson (`view`) and its runs (`run`, or `show` for one recorded earlier) to the room. A follower's page shows
 * the room's run at the presenter's cursor while it follows live; the moment the viewer moves the cursor
 * themselves (keys, scrubber, Play) or presses Detach, it stops following and explores on its own, the
 * mirror still kept up to date, until "Rejoin live" puts the page back where the presenter is.
 */

import { currentLesson, host, openRun, store, useLesson } from "paralab/lesson-page.js";
import { connectRoom } from "paralab/room-connection.js";
import { displayCode, saveSecret, savedSecret } from "paralab/rooms.js";
import { clearErrors, showErrors } from "paralab/controls/params-form.js";
import { renderRecentRuns } from "paralab/views/recent-runs.js";
import { typing } from "paralab/controls/keyboard.js";
import { t, tMessage, tPlural, tText } from "paralab/i18n.js";
import { toggleBlank } from "paralab/chrome.js";
import { focusedPanel, panelName, panelNamed, setFocus } from "paralab/controls/focus.js";
import { here } from "paralab/root.js";

const $ = (selector) => document.querySelector(selector);
const page = $("[data-lesson]");
const code = $("[data-room]").dataset.room;
const form = $("#run-form");
const runButton = form.querySelector('button[type="submit"]');

// ---- who we are: the secret comes in the fragment once, then lives in this tab's sessionStorage ---------
const fragment = new URLSearchParams(location.hash.slice(1));
if (fragment.get("secret")) {
  saveSecret(code, fragment.get("secret"));
  history.replaceState(history.state, "", location.pathname);   // off the address bar (and the projector)
}
let secret = fragment.get("secret") || savedSecret(code);
let role = secret ? "presenter" : "follower";
const wanted = {                               // what the presenter's form starts from (from "Present")
  lesson: fragment.get("lesson"),
  values: {
    world_size: fragment.get("world_size") ? Number(fragment.get("world_size")) : null,
    params: Object.fromEntries([...fragment].filter(([k]) => !["secret", "lesson", "world_size"].includes(k))),
  },
};

// ---- the room, as the server describes it -------------------------------------------------------------
const room = { run: null, runInfo: null, events: [], cursor: 0, view: {}, followers: 0 };
let live = true;              // a follower shows what the presenter shows
let startShownRun = null;     // the recorded run this presenter just showed: it opens at its start
let applying = false;         // this module moves the cursor (not the viewer)
let refused = null;           // the server's last word when it closed the room to us
let runStarting = false;      // the presenter sent "run"; its answer has not come yet
let viewSent = false;         // the presenter alone changes the room's view: once it sent one, its own is the
                              // newest, and a state echoing an earlier one (handled late) must not undo it
let handlers = null;          // lesson-page's callbacks for the run on screen
let connState = "connecting";
let cardDismissed = false;

function withApplying(fn) {
  const was = applying;
  applying = true;
  try {
    fn();
  } finally {
    applying = was;
  }
}

// ---- the socket ---------------------------------------------------------------------------------------------
let socket = null;

function connect() {
  socket?.close();
  socket = connectRoom(code, {
    secret: role === "presenter" ? secret : null,
    resume: () => (room.run ? { run: room.run, since: room.events.length } : {}),
    onMessage,
    onState(state, detail) {
      connState = state;
      if (state === "refused") onRefused(detail);
      else handlers?.onState(state === "connecting" ? "connecting" : state);
      renderBar();
    },
  });
}

function onMessage(message) {
  if (message.type === "state") onRoomState(message);
  else if (message.type === "event") onRoomEvent(message);
  else if (message.type === "followers") {
    room.followers = message.count;
    renderBar();
  } else if (message.error !== undefined) onError(message);
}

function onRoomState(state) {
  room.followers = state.followers;
  if (!(role === "presenter" && viewSent)) room.view = state.view || {};
  room.cursor = state.cursor || 0;
  if (state.run !== room.run) {
    room.run = state.run;
    room.runInfo = null;
    room.events = [];
    if (state.run && !learnRun()) loadRunInfo(state.run);
    if (runStarting) {
      runStarting = false;
      runButton.disabled = false;
      runButton.blur();
    }
    if (state.run && role === "follower" && !live) say("The presenter started a new run.");
  }
  learnRun();
  if (role === "presenter" && !presenterSetUp) setUpPresenter();
  requestApply();
  renderBar();
}

function onRoomEvent({ run, event }) {
  if (run !== room.run) return;
  if (event.seq <= room.events.length) return;                 // already held
  if (event.seq !== room.events.length + 1) {                 // a gap the server never makes: start again
    socket.drop();
    return;
  }
  room.events.push(event);
  if (showing()) withApplying(() => store.append([event]));
  renderBar();
}

function onError(error) {
  if (runStarting) {                                          // the run we asked for was refused
    runStarting = false;
    runButton.disabled = false;
    showErrors(form, Array.isArray(error.error) ? error.error : error);
    return;
  }
  const text = Array.isArray(error.error) ? error.error.map((e) => tMessage(e)).join(t("; ")) : tMessage(error);
  if (store.state.run?.step && handlers && role === "presenter") handlers.onNotice(text);
  else say(text);
}

function onRefused({ code: closeCode, message }) {
  if (closeCode === 4403 && role === "presenter") {          // a wrong secret: follow, read-only
    try {
      sessionStorage.removeItem(`paralab:room-secret:${code}`);
    } catch { /* nothing saved */ }
    secret = null;
    role = "follower";
    say("The presenter secret is wrong: you follow this room read-only.");
    connect();
    return;
  }
  refused = message ? tMessage(message) : t("No room {code}: unknown or expired code", { code: displayCode(code) });
  say(refused, { sticky: true });
}

/**
 * What the run is (lesson, world size, parameters, step mode). The presenter puts it in the room's view
 * (`view.run`), so followers need not be allowed to read the run itself (a hosted lab's runs are their
 * owner's); the presenter, or a follower before the view says, asks the API.
 */
function learnRun() {
  const told = room.view.run;
  if (!room.run || room.runInfo || told?.id !== room.run) return Boolean(room.runInfo);
  room.runInfo = told;
  requestApply();
  return true;
}

async function loadRunInfo(id) {
  for (let attempt = 0; room.run === id && !room.runInfo; attempt++) {
    try {
      const response = await fetch(here(`/api/runs/${encodeURIComponent(id)}`));
      if (response.ok) {
        const info = await response.json();
        if (room.run === id && !room.runInfo) {
          room.runInfo = info;
          requestApply();
        }
        if (role === "presenter" && room.run === id && room.view.run?.id !== id) {
          const { lesson, world_size, params, step } = info;
          sendView({ run: { id, lesson, world_size, params, step } });
        }
        return;
      }
    } catch { /* the server is restarting: try again */ }
    await new Promise((resolve) => setTimeout(resolve, Math.min(4000, 250 * 2 ** attempt)));
  }
}

// ---- what the page shows --------------------------------------------------------------------------------------
/** Whether the page shows the room's run now (and so takes its events as they come). */
function showing() {
  return (role === "presenter" || live) && Boolean(room.run) && store.state.run?.id === room.run;
}

/** The lesson the room is on: the presenter's choice, else its run's. */
function roomLesson() {
  return room.view.lesson || room.runInfo?.lesson || page.dataset.lesson;
}

let applyRunning = false;
let applyAgain = false;

async function requestApply() {
  if (applyRunning) {
    applyAgain = true;
    return;
  }
  applyRunning = true;
  try {
    do {
      applyAgain = false;
      await apply();
    } while (applyAgain);
  } finally {
    applyRunning = false;
    renderBar();
  }
}

async function apply() {
  if (role === "follower" && !live) {       // exploring: the cursor stays theirs, the run they explore still grows
    if (room.run && store.state.run?.id === room.run && store.state.log.length < room.events.length) {
      withApplying(() => store.append(room.events.slice(store.state.log.length)));
    }
    return;
  }
  const lesson = roomLesson();
  if (lesson !== page.dataset.lesson || !currentLesson()) {
    await useLesson(lesson, { values: role === "presenter" && lesson === wanted.lesson ? wanted.values : {} });
    syncPicker();
  }
  const info = room.runInfo;
  if (!room.run || !info || info.lesson !== page.dataset.lesson) {
    if (store.state.run) withApplying(() => store.load(null));
    return;
  }
  const atEnd = room.cursor >= room.events.length;
  if (store.state.run?.id !== room.run) {
    const shownFromStart = role === "presenter" && startShownRun === room.run;   // a recorded run: from its first event
    startShownRun = null;
    const presenterSeq = shownFromStart ? 1 : (atEnd ? null : room.cursor || null);
    withApplying(() => {
      openRun(info, { seq: role === "presenter" ? presenterSeq : Math.max(room.cursor, 1) });
      store.append(room.events);
    });
  } else if (store.state.log.length < room.events.length) {
    withApplying(() => store.append(room.events.slice(store.state.log.length)));
  }
  if (role === "presenter" && startShownRun === room.run) {      // the run on screen shown again: from its start,
    startShownRun = null;                                          // where the room's cursor now is
    withApplying(() => store.seekSeq(1));
  }
  if (role === "follower") {
    withApplying(() => {
      if (store.state.playing) store.pause();
      store.seekSeq(Math.max(room.cursor, 1));
    });
  }
  if (role === "follower" && room.view.panel) showPanel(room.view.panel);
  if (role === "follower") mirrorBlank();
  if (role === "follower") mirrorFocus();
}

/** The presenter's focus view (Z, a panel's Focus) is the followers' too: entered, changed, left with it.
 * Mirrored when the presenter's focus changes only, so a follower's own Z lasts until the presenter's next. */
let focusShown;                  // the presenter's focus last mirrored (undefined: none yet)
function mirrorFocus() {
  const wanted = room.view.focus || null;
  if (wanted === focusShown) return;
  const panel = panelNamed(wanted);
  if (wanted && (!panel || panel.hidden)) return;               // its lesson's page is not drawn yet
  focusShown = wanted;
  if (panelName(focusedPanel()) !== wanted) setFocus(panel);
}
document.addEventListener("paralab:focus", (event) => {
  const focus = panelName(event.detail.panel);
  if (role === "presenter" && (room.view.focus || null) !== focus) sendView({ focus });
});

/** The presenter's blank screen (B) blanks the screens following live, and lifts with it. */
let blankShown = false;
function mirrorBlank() {
  const wanted = Boolean(room.view.blank);
  if (wanted !== blankShown) {
    blankShown = wanted;
    toggleBlank(wanted);
  }
}
document.addEventListener("paralab:blank", (event) => {
  if (role === "presenter" && Boolean(room.view.blank) !== event.detail.on) sendView({ blank: event.detail.on });
});

// ---- the presenter's side ------------------------------------------------------------------------------------
let presenterSetUp = false;

function setUpPresenter() {
  presenterSetUp = true;
  const lesson = wanted.lesson || room.view.lesson || room.runInfo?.lesson || page.dataset.lesson;
  if (lesson !== room.view.lesson) sendView({ lesson });
}

function sendView(change) {
  viewSent = true;
  room.view = { ...room.view, ...change };
  socket.send({ op: "view", view: room.view });
}

host.start = (body) => {
  if (role !== "presenter") return;
  clearErrors(form);
  if (room.view.lesson !== body.lesson) sendView({ lesson: body.lesson });
  if (!socket.send({ op: "run", ...body })) {
    showErrors(form, "Not connected to the room right now; try again in a moment.");
    return;
  }
  runStarting = true;
  runButton.disabled = true;
};

/** Cancel through the room's socket: the server refuses a room's run's cancel without the presenter's secret. */
host.cancel = () => {
  if (role === "presenter") socket.send({ op: "cancel" });
};

/** The run's "connection" for lesson-page: the room's socket, the stepper's messages in the room's words. */
host.connect = (run, callbacks) => {
  handlers = callbacks;
  callbacks.onState(connState === "open" ? "open" : "connecting");
  return {
    send(message) {
      if (role !== "presenter") return false;
      return socket.send({ ...message, op: message.op === "step" ? "release" : message.op });
    },
    get open() {
      return role === "presenter" && socket.open;
    },
    get last() {
      return store.state.log.length;
    },
    close() {},
    drop() {
      socket.drop();
    },
  };
};

// ---- earlier runs: the presenter shows the room a run recorded before (a lecturer's safety net) ------------
const earlier = $("#room-earlier");
const earlierButton = $('[data-action="earlier-runs"]');

async function showEarlier(show = earlier.hidden) {
  earlier.hidden = !show;
  earlierButton.setAttribute("aria-expanded", String(show));
  if (!show) return;
  cardDismissed = true;
  showCard(false);
  let runs = [];
  try {
    const response = await fetch(here("/api/runs?limit=50"));
    if (response.ok) runs = await response.json();
  } catch { /* none to offer */ }
  const list = $("#room-earlier-list");
  renderRecentRuns(list, runs, page.dataset.lesson, { onShow: showToRoom, limit: 12, current: room.run });
  $("#room-earlier-empty").hidden = !list.hidden;
  list.querySelector("button")?.focus();
}

function showToRoom(run) {
  if (role !== "presenter") return;
  if (!socket.open) {
    say("Not connected to the room right now; try again in a moment.");
    return;
  }
  const { id, lesson, world_size, params, step } = run;
  sendView({ lesson, run: { id, lesson, world_size, params, step } });     // followers need not ask the API
  startShownRun = id;
  socket.send({ op: "show", run: id });
  showEarlier(false);
  earlierButton.focus();
}

// The presenter's cursor goes to the room, at most every 100 ms (and always the latest).
let seekTimer = null;
let lastSeek = 0;

function cursorSeq() {
  const { log, cursor } = store.state;
  return cursor >= 0 ? log[cursor].seq : 0;
}

function sendSeek() {
  seekTimer = null;
  if (role !== "presenter" || store.state.run?.id !== room.run) return;
  const seq = cursorSeq();
  if (seq === room.cursor) return;
  if (socket.send({ op: "seek", seq })) {
    room.cursor = seq;
    lastSeek = Date.now();
  }
  renderBar();
}

store.on("cursor", () => {
  if (role === "presenter") {
    if (!seekTimer) seekTimer = setTimeout(sendSeek, Math.max(0, 100 - (Date.now() - lastSeek)));
  } else if (!applying && live && store.state.run) detach();
});
store.on("playback", () => {
  if (role === "follower" && !applying && live && store.state.playing) detach();
});

// The presenter's lesson picker.
const picker = $("#room-lesson");
function syncPicker() {
  if (picker) picker.value = page.dataset.lesson;
}
picker?.addEventListener("change", async () => {
  if (role !== "presenter") return;
  sendView({ lesson: picker.value, panel: null });   // the last lesson's panel: followers would scroll to it
  await requestApply();
});

// The panel the presenter looks at: followers scroll there too.
const stage = $(".stage");
let panelTimer = null;
function visiblePanel() {
  const top = Math.max(stage.getBoundingClientRect().top, 0);
  for (const panel of stage.querySelectorAll(":scope > .panel")) {
    if (panel.hidden) continue;
    const r = panel.getBoundingClientRect();
    if (r.bottom > top + 48) return panel.id || panel.querySelector(":scope > div[id]")?.id || null;
  }
  return null;
}
function onPresenterScroll() {
  if (role !== "presenter") return;
  clearTimeout(panelTimer);
  panelTimer = setTimeout(() => {
    const panel = visiblePanel();
    if (panel && panel !== room.view.panel) sendView({ panel });
  }, 250);
}
stage.addEventListener("scroll", onPresenterScroll, { passive: true });
window.addEventListener("scroll", onPresenterScroll, { passive: true });
// A panel shown or hidden (a run's log chose the panels: another lesson's, say) moves what is on top without a scroll.
new MutationObserver((changes) => {
  if (changes.some((c) => c.target.parentElement === stage)) onPresenterScroll();
}).observe(stage, { attributes: true, attributeFilter: ["hidden"], subtree: true });

let shownPanel = null;
function showPanel(id) {
  if (id === shownPanel) return;
  shownPanel = id;
  const el = document.getElementById(id);
  const panel = el?.closest(".panel") || el;
  if (panel && !panel.hidden) panel.scrollIntoView({ block: "start", behavior: "smooth" });
}

// ---- the follower's side -------------------------------------------------------------------------------------
function detach() {
  if (role !== "follower" || !live) return;
  live = false;
  renderBar();
}

function rejoin() {
  if (role !== "follower") return;
  live = true;
  shownPanel = null;
  focusShown = undefined;
  requestApply();
  renderBar();
}

// Step-mode keys drive the ranks: a follower's are refused here, before the stepper sees them.
window.addEventListener("keydown", (event) => {
  if (role !== "follower" || !store.state.run?.step || typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
  if (/^[0-9]$/.test(event.key) || "aAcCpP".includes(event.key) && event.key.length === 1) {
    event.preventDefault();
    say("Only the presenter drives this room.");
  }
}, { capture: true });

// ---- the room bar -----------------------------------------------------------------------------------------------
let noticeTimer = null;

function say(text, { sticky = false } = {}) {
  const notice = $(".room-notice");
  notice.textContent = tText(text);
  notice.hidden = false;
  clearTimeout(noticeTimer);
  if (!sticky) noticeTimer = setTimeout(() => { notice.hidden = true; }, 6000);
}

function renderBar() {
  document.body.dataset.role = role;
  document.body.dataset.live = String(role === "presenter" || live);
  const roleText = refused ? "No such room"
    : connState === "reconnecting" ? "Reconnecting…"
      : connState === "connecting" ? "Connecting…"
        : role === "presenter" ? "Presenter" : live ? "Following live" : "Exploring on your own";
  $("#room-role").textContent = t(roleText);
  $("#room-role").dataset.state = refused ? "refused" : connState === "open" ? (role === "presenter" ? "presenter" : live ? "live" : "detached") : connState;
  const count = $("#follower-count");
  count.textContent = tPlural(room.followers, "{n} follower", "{n} followers");
  $('[data-action="detach"]').hidden = role !== "follower" || !live || Boolean(refused);
  $('[data-action="rejoin"]').hidden = role !== "follower" || live || Boolean(refused);
  const where = $("#room-where");
  where.hidden = role !== "follower" || live || !room.run;
  where.textContent = store.state.run?.id === room.run ? t("presenter at seq {n}", { n: room.cursor }) : t("presenter on another run");
  const own = $("#own-page");
  const shown = store.state.run;
  own.hidden = !shown || role !== "follower";
  if (shown) own.href = here(`/lessons/${encodeURIComponent(shown.lesson)}?run=${encodeURIComponent(shown.id)}&seq=${cursorSeq() || 1}`);
  document.body.classList.toggle("room-refused", Boolean(refused));
  // The code and the QR, large, while the presenter has not started a run.
  if (role === "presenter" && !room.run && !cardDismissed && connState === "open") showCard(true);
  if (room.run && role === "presenter" && !cardDismissed) {
    cardDismissed = true;
    showCard(false);
  }
}

// ---- the room card: the code and the QR code, large ----------------------------------------------------------------
const card = $("#room-card");
const cardButton = $('[data-action="room-card"]');

function showCard(show = card.hidden) {
  card.hidden = !show;
  cardButton.setAttribute("aria-expanded", String(show));
}

cardButton.addEventListener("click", () => {
  cardDismissed = true;
  showCard();
});
$('[data-action="room-card-close"]').addEventListener("click", () => {
  cardDismissed = true;
  showCard(false);
  cardButton.focus();
});
earlierButton.addEventListener("click", () => showEarlier());
$('[data-action="room-earlier-close"]').addEventListener("click", () => {
  showEarlier(false);
  earlierButton.focus();
});
$('[data-action="detach"]').addEventListener("click", detach);
$('[data-action="rejoin"]').addEventListener("click", rejoin);
$('[data-action="copy-presenter-link"]').addEventListener("click", async (event) => {
  const link = `${location.origin}${here(`/rooms/${code}`)}#secret=${encodeURIComponent(secret || "")}`;
  const button = event.currentTarget;
  try {
    await navigator.clipboard.writeText(link);
    button.textContent = t("Copied");
    setTimeout(() => { button.textContent = t("Copy presenter link"); }, 2000);
  } catch {
    window.prompt(t("Copy presenter link"), link);
  }
});

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === "l" || event.key === "L") rejoin();
  else if (event.key === "q" || event.key === "Q") {
    cardDismissed = true;
    showCard();
  } else if (event.key === "Escape" && !card.hidden) showCard(false);
  else if (event.key === "Escape" && !earlier.hidden) showEarlier(false);
  else return;
  event.preventDefault();
});

window.paralab.room = {
  get state() {
    return { ...room, events: room.events.length, role, live, connection: connState, refused };
  },
  get socket() {
    return socket;
  },
  detach,
  rejoin,
};

renderBar();
connect();
