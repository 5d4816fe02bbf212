/**
 * The interface in English and Chinese. One dictionary, keyed by the English text (as gettext does):
 * pages and views keep writing English, and in Chinese a watcher translates every text node and label
 * it knows — the page chrome, panel headings, buttons, statuses, the room's words. Lesson texts (code,
 * explanations, the lesson's own labels) are not translated here; explanations come in Chinese from the
 * server where the lesson has `explain.zh.md`.
 *
 * `t(english, vars)` translates one string for code that builds text itself; `{name}` is replaced by
 * `vars.name`. `setLang("zh")` switches, remembers the choice and tells the page ("paralab:lang").
 */

const KEY = "paralab:lang";
export const LANGS = { en: "English", zh: "中文" };

/** English → Chinese. Exact strings (after trimming). */
const ZH = {
  // top bar, display settings
  "Smaller text": "缩小文字",
  "Larger text": "放大文字",
  "text size": "文字大小",
  "display": "显示",
  "Present": "演示",
  "Open a lecture room for this lesson: a code and a QR code your audience joins": "为本课开一个课堂：观众用房间码或二维码加入",
  "Theme": "主题",
  "Light": "浅色",
  "Dark": "深色",
  "High contrast": "高对比度",
  "Keys": "快捷键",
  "Keyboard shortcuts (?)": "快捷键 (?)",
  "Language": "语言",
  // index
  "Watch distributed training happen": "看分布式训练如何进行",
  "lessons": "课程",
  "No lessons are installed.": "没有安装任何课程。",
  "Lecture room": "课堂",
  "Join a room": "加入课堂",
  "Room code": "房间码",
  "Join": "加入",
  "Start presenting": "开始演示",
  "Open a room, put its code on the projector, and your audience follows your runs and steps on their own laptops.":
    "开一个课堂，把房间码投到屏幕上，听众在自己的电脑上跟随你的运行和每一步。",
  "Type the code from the projector (letters and digits; case and dashes do not matter).":
    "输入投影上的房间码（字母和数字；大小写和连字符都可以）。",
  "Opening a room…": "正在开课堂…",
  "Checking the code…": "正在检查房间码…",
  // lesson page: form and panels
  "Parameters": "参数",
  "step mode": "单步模式",
  "▶ Run": "▶ 运行",
  "Cancel run": "取消运行",
  "ranks (world size)": "rank 数（world size）",
  "Ranks": "各 rank",
  "Collective": "集合通信",
  "Tensors": "张量",
  "Checks": "校验",
  "Communication": "通信",
  "Source": "源代码",
  "Explanation": "讲解",
  "Cost model": "代价模型",
  "Before → after": "之前 → 之后",
  "Send / recv, step by step": "逐步 send / recv",
  "every rank against one process": "每个 rank 与单进程结果对比",
  "each rank's shard in place, outlined in its colour; hover for values": "各 rank 的分片放在原位，用其颜色描边；悬停查看数值",
  "measured time against the α–β model, over message sizes": "不同消息大小下实测时间与 α–β 模型对比",
  "every number coloured by the rank(s) it came from; hover a cell to trace it": "每个数按其来源 rank 着色；悬停单元格追踪来源",
  "each rank's buffer; arrows carry the chunks sent in this step": "各 rank 的缓冲区；箭头表示这一步发送的块",
  "This lesson has no explanation yet.": "本课还没有讲解。",
  "Pipeline schedule": "流水线调度",
  "measured above, the ideal grid below, rank by rank": "上方为实测，下方为理想网格，逐个 rank",
  "Timeline": "时间线",
  "each rank: compute above, communication below; hover a block": "每个 rank：上方计算，下方通信；悬停查看块",
  "Process groups": "进程组",
  "every rank at its (dp, stage, tp) place; a group lights up while it communicates": "每个 rank 位于其 (dp, stage, tp) 位置；通信时该组高亮",
  "Memory per rank": "每个 rank 的内存",
  "measured bytes against the ZeRO formula": "实测字节数与 ZeRO 公式对比",
  "Numbers": "数值",
  "what the ranks measured, beside the lesson's formula": "各 rank 的实测值与本课公式并列",
  "Earlier runs of this lesson": "本课之前的运行",
  // scrubber
  "▶ Play": "▶ 播放",
  "❚❚ Pause": "❚❚ 暂停",
  "speed": "速度",
  "● live": "● 直播",
  "event": "事件",
  "event playback": "事件回放",
  "First event (Home)": "第一个事件 (Home)",
  "Previous event (←)": "上一个事件 (←)",
  "Next event (→ or Space)": "下一个事件 (→ 或空格)",
  "Last event (End)": "最后一个事件 (End)",
  "No event yet.": "还没有事件。",
  // run status
  "No run yet": "还没有运行",
  "Run queued": "运行排队中",
  "Run running": "运行中",
  "Run paused": "运行已暂停",
  "Run done": "运行完成",
  "Run failed": "运行失败",
  "Run cancelled": "运行已取消",
  " · reconnecting…": " · 正在重连…",
  "The run failed": "运行失败",
  "The run was cancelled": "运行已取消",
  // empty states of the views
  "No collective yet at this step. Step forward (→) to reach one.": "这一步还没有集合通信。按 → 前进。",
  "No tensors shown yet at this step.": "这一步还没有张量。",
  "Nothing communicated yet at this step.": "这一步还没有通信。",
  "No checks yet at this step: each rank compares its numbers with the single-process reference at the end.":
    "这一步还没有校验：最后每个 rank 会把结果与单进程参考对比。",
  "Press ▶ Run to start the ranks. Then step through what they did: Space or → next event, ← back, Home/End, or ▶ Play.":
    "按 ▶ 运行 启动各 rank，然后逐步查看它们做了什么：空格或 → 下一个事件，← 后退，Home/End，或 ▶ 播放。",
  "Every tensor shown so far is drawn in the panels above.": "目前的张量都画在上面的面板里。",
  // panel tools
  "Table": "表格",
  "Show this picture as a table": "以表格显示这幅图",
  "PNG": "PNG",
  "SVG": "SVG",
  "Save this picture as PNG": "把这幅图存为 PNG",
  "Save this picture as SVG": "把这幅图存为 SVG",
  "Export HTML": "导出 HTML",
  "Save this run as one HTML file that replays offline": "把这次运行存成一个可离线回放的 HTML 文件",
  "rank": "rank",
  "state": "状态",
  "doing": "正在做",
  "where": "位置",
  "events": "事件数",
  "tensor": "张量",
  "shape": "形状",
  "min": "最小值",
  "max": "最大值",
  "mean": "平均值",
  "values": "数值",
  "part": "部分",
  "op": "操作",
  "group": "组",
  "input": "输入",
  "output": "输出",
  "what": "内容",
  // keys
  "Keyboard": "键盘快捷键",
  "Close": "关闭",
  "Next event": "下一个事件",
  "Previous event": "上一个事件",
  "First / last event": "第一个 / 最后一个事件",
  "Play / pause": "播放 / 暂停",
  "Blank the screen (press again to come back)": "黑屏（再按一次恢复）",
  "Full screen": "全屏",
  "This list of keys": "显示这份快捷键列表",
  "Larger / smaller text": "放大 / 缩小文字",
  "Close this list, or leave the blank screen": "关闭列表或退出黑屏",
  "Step mode": "单步模式",
  "Release that rank": "放行该 rank",
  "Release every waiting rank": "放行所有等待的 rank",
  "Continue / pause the ranks": "继续 / 暂停各 rank",
  "In a room": "在课堂中",
  "Rejoin the presenter (followers)": "重新跟随演示者（听众）",
  "Show the room code and QR code": "显示房间码和二维码",
  "The screen is blank. Press B to come back.": "屏幕已黑。按 B 恢复。",
  // rooms
  "Room": "课堂",
  "room code": "房间码",
  "Presenter": "演示者",
  "Following live": "正在跟随直播",
  "Exploring on your own": "正在自己探索",
  "Detach": "脱离",
  "Explore on your own: the presenter's steps no longer move your page": "自己探索：演示者的操作不再移动你的页面",
  "Rejoin live": "重新跟随直播",
  "Go back to where the presenter is": "回到演示者所在的位置",
  "Show code": "显示房间码",
  "Hide": "隐藏",
  "lesson": "课程",
  "Lesson": "课程",
  "Join this room": "加入这个课堂",
  "Scan the QR code or open this address, then follow along.": "扫描二维码或打开这个地址，然后跟着看。",
  "QR code of this room's address": "本课堂地址的二维码",
  "Waiting for the presenter to start a run.": "等待演示者开始运行。",
  "Connecting…": "正在连接…",
  "Reconnecting…": "正在重连…",
  "Connected": "已连接",
  "Copy presenter link": "复制演示者链接",
  "Earlier runs": "之前的运行",
  "Show the room a run recorded earlier, instead of starting one": "给课堂展示一次之前录下的运行，而不是开始新的运行",
  "Show to the room": "展示给课堂",
  "No earlier runs of this lesson yet.": "本课还没有之前的运行。",
  "Copied": "已复制",
  "Open this run on its own page": "在单独页面打开这次运行",
  "No such room": "没有这个课堂",
  "Join another room": "加入其他课堂",
  "Back to the lessons": "返回课程列表",
  "This code is unknown or the room has expired. Check the code on the projector and try again.":
    "这个房间码不存在，或课堂已过期。请核对投影上的房间码后重试。",
  "The presenter secret is wrong: you follow this room read-only.": "演示者密钥错误：你以只读方式跟随这个课堂。",
  "Only the presenter drives this room.": "只有演示者可以控制这个课堂。",
  "The presenter started a new run.": "演示者开始了新的运行。",
  // views: source, stepper, checks, tables
  "No line at this step: the current event names no line of this code.": "这一步没有对应的代码行：当前事件不指向这段代码。",
  "The line the current event comes from is highlighted here.": "当前事件来自的代码行会在这里高亮。",
  "Release all": "全部放行",
  "Continue": "继续",
  "Pause": "暂停",
  "Every rank has finished.": "所有 rank 都已完成。",
  "The ranks are running to their next call.": "各 rank 正在运行到下一个调用。",
  "Waiting for the ranks to reach their first call.": "等待各 rank 到达第一个调用。",
  "Nothing at this step.": "这一步还没有内容。",
  "What each rank does at this step": "这一步每个 rank 在做什么",
  "Tensors at this step": "这一步的张量",
  "finished": "已完成",
  "not started": "未开始",
  "waiting": "等待中",
  "done": "完成",
  "not here yet": "尚未到达",
  "in the call": "调用中",
  // offline recording
  "Recording": "录像",
  "A recorded run, replayed from this file: no server needed.": "从这个文件回放的录制运行：无需服务器。",
  // the hosted lab: the top bar's user menu, a problem's submission, the admin's users
  "Practice problems": "练习题",
  "Admin": "管理",
  "Sign out": "退出登录",
  "Your account": "你的账户",
  "Change password": "修改密码",
  "Current password": "当前密码",
  "New password (8 characters or more)": "新密码（至少 8 个字符）",
  "Password changed.": "密码已修改。",
  "Cancel": "取消",
  "Stop judging this submission": "停止评测这次提交",
  "Judging on real ranks…": "正在真实的 rank 上评测…",
  "Refused — not run": "被拒绝 — 未运行",
  "Cancelled": "已取消",
  "Reset password": "重置密码",
  "Delete": "删除",
  "New password for {name} (8 characters or more)": "{name} 的新密码（至少 8 个字符）",
  "The password of {name} is reset; their sessions have ended.": "{name} 的密码已重置；其登录会话均已结束。",
  "Delete {name} and all of their submissions?": "删除 {name} 及其全部提交？",
  "{name} is deleted.": "{name} 已删除。",
};

/** Strings with numbers in them: [pattern on the trimmed English, Chinese with $1…]. */
const ZH_PATTERNS = [
  [/^(\d+) followers?$/, "$1 位听众"],
  [/^· (\d+) events$/, "· $1 个事件"],
  [/^· (\d+) ranks?$/, "· $1 个 rank"],
  [/^presenter at seq (\d+)$/, "演示者在第 $1 个事件"],
  [/^Room (\S+)$/, "课堂 $1"],
  [/^No room (\S+): unknown or expired code$/, "没有课堂 $1：房间码不存在或已过期"],
  [/^(\d+) world sizes · (\S+)$/, "$1 种 world size · $2"],
  [/^up to (\d+) on this server$/, "本服务器最多 $1 个"],
  [/^All (\d+) checks passed \((\d+) checks? × (\d+) ranks?\)$/, "全部 $1 项校验通过（$2 项 × $3 个 rank）"],
  [/^(\d+) of (\d+) checks FAILED$/, "$2 项校验中 $1 项失败"],
  [/^(\d+) of (\d+) checks done, all passed so far$/, "已完成 $1/$2 项校验，目前全部通过"],
  [/^(\d+) of (\d+) shards in place$/, "已就位 $1/$2 个分片"],
  [/^Theme: (.+)$/, (m, name) => `主题：${ZH[name] || name}`],
  [/^Waiting for the judge — position (\S+) in the queue$/, "等待评测 — 队列第 $1 位"],
  [/^Passed — all (\d+) checks$/, "通过 — 全部 $1 项校验"],
  [/^Failed — (\d+) of (\d+) checks passed$/, "未通过 — $2 项校验中 $1 项通过"],
];

const DICTS = { zh: [ZH, ZH_PATTERNS] };

export function currentLang() {
  try {
    return localStorage.getItem(KEY) === "zh" ? "zh" : "en";
  } catch {
    return "en";
  }
}

/** `english` in the current language (itself where there is no translation); `{name}` from `vars`. */
export function t(english, vars = {}, lang = currentLang()) {
  const out = translate(english, lang) ?? english;
  return out.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
}

/** The translation of one trimmed string, or null. */
function translate(text, lang) {
  const dict = DICTS[lang];
  if (!dict) return null;
  const [exact, patterns] = dict;
  if (Object.hasOwn(exact, text)) return exact[text];
  for (const [pattern, replacement] of patterns) {
    if (pattern.test(text)) return text.replace(pattern, replacement);
  }
  return null;
}

// ---- translating the page in place ------------------------------------------------------------------
const SKIP = "code, pre, script, style, textarea, .prose, .source-code, [translate='no'], .params-summary";
const ATTRS = ["aria-label", "title", "placeholder", "alt"];
const written = new WeakMap();   // text node or element → what this module wrote over which English
let observer = null;
let active = "en";

function skipped(node) {
  const el = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
  return !el || Boolean(el.closest(SKIP));
}

/** `source` in the active language, keeping its surrounding spaces. */
function localise(source) {
  const trimmed = source.trim();
  if (!trimmed || active === "en" || /^[\d\s.,:·/%×#-]*$/.test(trimmed)) return source;
  const out = translate(trimmed, active);
  return out === null ? source : source.replace(trimmed, () => out);
}

function translateText(node) {
  const record = written.get(node);
  const current = node.data;
  const source = record && current === record[1] ? record[0] : current;   // a view may have rewritten it
  const next = localise(source);
  if (next !== source) written.set(node, [source, next]);
  else written.delete(node);
  if (current !== next) node.data = next;
}

function translateAttrs(el) {
  let records = written.get(el);
  for (const name of ATTRS) {
    if (!el.hasAttribute(name)) continue;
    const current = el.getAttribute(name);
    const record = records?.[name];
    const source = record && current === record[1] ? record[0] : current;
    const next = localise(source);
    if (next !== source) {
      if (!records) written.set(el, (records = {}));
      records[name] = [source, next];
    } else if (records) delete records[name];
    if (current !== next) el.setAttribute(name, next);
  }
}

/** Translate (or, in English, restore) everything under `root`. */
export function translateTree(root) {
  if (root.nodeType === Node.TEXT_NODE) {
    if (!skipped(root)) translateText(root);
    return;
  }
  if (root.nodeType !== Node.ELEMENT_NODE && root.nodeType !== Node.DOCUMENT_NODE) return;
  const start = root.nodeType === Node.DOCUMENT_NODE ? root.documentElement : root;
  if (skipped(start)) return;
  const walker = document.createTreeWalker(start, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.nodeType === Node.ELEMENT_NODE && node.matches(SKIP) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  for (let node = walker.currentNode; node; node = walker.nextNode()) {
    if (node.nodeType === Node.TEXT_NODE) translateText(node);
    else translateAttrs(node);
  }
}

function watch() {
  observer?.disconnect();
  observer = null;
  if (active === "en") return;
  observer = new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === "childList") for (const node of record.addedNodes) translateTree(node);
      else if (record.type === "characterData") {
        if (!skipped(record.target)) translateText(record.target);
      } else if (record.type === "attributes" && !skipped(record.target)) translateAttrs(record.target);
    }
  });
  observer.observe(document.documentElement, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ATTRS });
}

/** Put the page in `lang` now, translating what is there and what views draw later. */
export function applyLang(lang = currentLang()) {
  active = DICTS[lang] || lang === "en" ? lang : "en";
  document.documentElement.lang = active === "zh" ? "zh-CN" : "en";
  translateTree(document);
  watch();
}

/** Switch the interface's language, remember it, and tell the page ("paralab:lang" on document). */
export function setLang(lang) {
  try {
    localStorage.setItem(KEY, lang);
  } catch {
    /* private mode: this page only */
  }
  applyLang(lang);
  document.dispatchEvent(new CustomEvent("paralab:lang", { detail: { lang: active } }));
}
