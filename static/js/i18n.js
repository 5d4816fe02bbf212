/**
 * The interface in English and Chinese. One dictionary, keyed by the English text (as gettext does):
 * pages and views keep writing English, and in Chinese a watcher translates every text node and label
 * it knows — the page chrome, panel headings, buttons, statuses, the room's words. Lesson texts (code,
 * explanations, the lesson's own labels) are not translated here; explanations come in Chinese from the
 * server where the lesson has `explain.zh.md`.
 *
 * `t(english, vars)` translates one string for code that builds text itself; `{name}` is replaced by
 * `vars.name` (such templates are in `ZH_BUILT`); `tPlural(n, one, many)` picks by count. `tServer(message)`
 * translates what the server wrote (a run's error, a refusal, a 422's `msg`) by the patterns of `ZH_SERVER`,
 * falling back to the English. `setLang("zh")` switches, remembers the choice and tells the page
 * ("paralab:lang"); the lesson page then draws its views again in the new language.
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
  "Delete {name} with all of their submissions and runs?": "删除 {name} 及其全部提交和运行记录？",
  "The server cannot be reached; trying again every 3 s.": "连不上服务器；每 3 秒重试一次。",
  "{name} is deleted.": "{name} 已删除。",
  "lab": "实验",
  "paralab — sign in": "paralab — 登录",
  "paralab — practice problems": "paralab — 练习题",
  "paralab — admin": "paralab — 管理",
  "paralab — lessons": "paralab — 课程",
  // the hosted lab: signing in, joining a class
  "Accounts are off on this server (the lecture mode): nobody needs to sign in.": "本服务器没有开启账户（讲课模式）：无需登录。",
  "Sign in": "登录",
  "Name": "用户名",
  "Password": "密码",
  "New here? Join your class": "第一次来？加入你的班级",
  "Class code": "班级注册码",
  "Choose a name": "取一个用户名",
  "Choose a password (8 characters or more)": "设置密码（至少 8 个字符）",
  "Join the class": "加入班级",
  // the hosted lab: the problems, a problem's page
  "Write the functions; the judge runs your code on real": "编写下面的函数；评测程序在真实的",
  "ranks and compares every output, gradient and the communication with a reference.": "rank 上运行你的代码，把每个输出、梯度和通信都与参考实现对比。",
  "Loading the statement…": "正在加载题目…",
  "Write": "需要编写",
  "Your solution (Python)": "你的解答（Python）",
  "Submit": "提交",
  "Put the starter code back": "恢复初始代码",
  "Starter code": "初始代码",
  "Your submissions": "你的提交",
  // the hosted lab: the admin page
  "In flight now": "正在进行",
  "Refresh": "刷新",
  "Runs": "运行",
  "Owner": "所有者",
  "Number of ranks": "rank 数",
  "Status": "状态",
  "Submissions": "提交",
  "Position": "队列位置",
  "User": "用户",
  "Problem": "题目",
  "Classes": "班级",
  "Class": "班级",
  "Sign-up code": "注册码",
  "Students": "学生数",
  "Results": "成绩",
  "New class": "新班级",
  "Create": "创建",
  "Everyone's results per problem (CSV)": "所有人每道题的成绩（CSV）",
  "Users": "用户",
  "Role": "角色",
  "student": "学生",
  "admin": "管理员",
  "No run in flight.": "没有进行中的运行。",
  "No submission waiting.": "没有等待评测的提交。",
  // the index page: the lessons, the practice problems, the keys
  "Each lesson starts real": "每节课都会启动真实的",
  "ranks, traces every collective and checks every number against a single process. Pick one, press Run, then step through it.":
    "rank，追踪每一次集合通信，并把每个数与单进程的结果对比。选一节课，按“运行”，然后逐步查看。",
  ": write the collectives yourself; a judge runs your code on real ranks and shows each check with the values that differ.":
    "：亲手实现集合通信；评测程序在真实的 rank 上运行你的代码，逐项给出校验结果和不一致的数值。",
  "On a lesson page:": "在课程页面：",
  "next event,": "下一个事件，",
  "previous,": "上一个，",
  "first,": "第一个，",
  "last;": "最后一个；",
  "blanks the screen,": "黑屏，",
  "full screen,": "全屏，",
  "lists every key.": "列出所有快捷键。",
  "sizes the text for a projector.": "为投影调整文字大小。",
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
  [/^(\d+) ranks? · write$/, "$1 个 rank · 需要编写"],
  [/^(\d+) ranks? ·$/, "$1 个 rank ·"],
];

/** One note of a hang report: "rank 3 last completed #1 all_reduce and finished its program". */
function zhLastCompleted(note) {
  const m = /^rank (\d+) last completed (nothing|#\d+ \S+)( and finished its program)?$/.exec(note);
  if (!m) return note;
  const what = m[2] === "nothing" ? `rank ${m[1]} 还没有完成任何调用` : `rank ${m[1]} 最后完成的是 ${m[2]}`;
  return what + (m[3] ? "，并已跑完自己的程序" : "");
}

/** "rank 0 waits in send to rank 1 (tag 1)", one p2p call of a hang report. */
function zhWaitsIn(call) {
  const m = /^rank (\d+) waits in (send|recv) (to|from) rank (\S+) \(tag (\S+)\)$/.exec(call);
  if (!m) return call;
  return `rank ${m[1]} 在${m[3] === "to" ? "向" : "从"} rank ${m[4]} 的 ${m[2]} 中等待（tag ${m[5]}）`;
}

/** A learner's exception as the judge reports it, Python's words kept: "ValueError: boom (your line 7: x = f())". */
function zhLearnerTrace(trace) {
  return trace.replace(/ \(your line (\d+): ([\s\S]*)\)$/, "（你的第 $1 行：$2）");
}

/**
 * What the server says (app/runs.py, app/flight_recorder.py, app/run_start.py, app/routes/rooms.py,
 * app/routes/control.py, the lessons' parameter rules, pydantic's messages in a 422, and the hosted lab's
 * refusals and the judge's reasons), in Chinese:
 * [pattern on the whole English message, Chinese with $1… or a function]. `tServer` uses the first match.
 */
const ZH_SERVER = [
  // a hang report (the page shows "hung for 10 s" apart, and the rest under it)
  [/^hung for (\S+) s: ([\s\S]+)$/, (m, s, rest) => `${s} 秒没有进展：${tServer(rest, "zh")}`],
  [/^no rank is inside a collective or send\/recv$/, "没有 rank 在集合通信或 send/recv 中"],
  [/^the ranks called different collectives as collective #(\d+) of group '([^']*)': (.+)$/,
    "各 rank 在组 '$2' 的第 $1 次集合通信处调用了不同的集合通信：$3"],
  [/^the ranks passed different shapes to (\S+) \(collective #(\d+) of group '([^']*)'\): (.+)$/,
    "各 rank 传给 $1（组 '$3' 的第 $2 次集合通信）的张量形状不同：$4"],
  [/^ranks (\[[^\]]*\]) wait in (\S+) \(collective #(\d+) of group '([^']*)'\); ranks (\[[^\]]*\]) never entered it(?: \((.+)\))?$/,
    (m, waiting, op, cseq, group, missing, notes) => `rank ${waiting} 在 ${op}（组 '${group}' 的第 ${cseq} 次集合通信）中等待；`
      + `rank ${missing} 始终没有进入${notes ? `（${notes.split("; ").map(zhLastCompleted).join("；")}）` : ""}`],
  [/^every rank entered (\S+) \(collective #(\d+) of group '([^']*)'\) and none came out$/,
    "每个 rank 都进入了 $1（组 '$3' 的第 $2 次集合通信），却没有一个出来"],
  [/^(.+): no send and recv pair up \(same ranks, same tag\)$/,
    (m, calls) => `${calls.split("; ").map(zhWaitsIn).join("；")}：没有能配对的 send 和 recv（要求 rank 互相对应、tag 相同）`],
  // a crash, a timeout, a run that never started or was stopped
  [/^rank (\d+) raised ([\s\S]+)$/, "rank $1 抛出 $2"],
  [/^rank (\d+) was killed by (\S+)$/, "rank $1 被 $2 终止"],
  [/^rank (\d+) exited with status (-?\d+)$/, "rank $1 退出，状态码 $2"],
  [/^the run passed its wall-clock limit of (\S+) s$/, "运行超过了 $1 秒的时间上限"],
  [/^could not start the ranks: ([\s\S]+)$/, "无法启动各 rank：$1"],
  [/^the server stopped while this run was in flight$/, "运行进行中服务器停止了"],
  [/^the server stopped$/, "服务器停止了"],
  [/^cancelled by the user$/, "被用户取消"],
  // refused control messages (step mode) and sockets
  [/^run (\S+) has ended$/, "运行 $1 已经结束"],
  [/^rank (\S+) is not waiting at a gate$/, "rank $1 没有在等待放行"],
  [/^unknown control op (.+)$/, "未知的控制操作 $1"],
  [/^a control message is a JSON object with an "op"(, sent as text)?$/, (m, text) => `控制消息必须是带 "op" 的 JSON 对象${text ? "，以文本发送" : ""}`],
  [/^control message too large \(at most (\d+) bytes\)$/, "控制消息过大（最多 $1 字节）"],
  [/^no run with id (.+)$/, "没有 id 为 $1 的运行"],
  [/^(\d+) runs are already queued; try again shortly$/, "已有 $1 个运行在排队；请稍后再试"],
  // rooms
  [/^no room '?([^':]+)'?: unknown or expired code$/, "没有课堂 $1：房间码不存在或已过期"],
  [/^wrong presenter secret: this socket was not opened$/, "演示者密钥错误：连接未打开"],
  [/^only the presenter drives this room: open it with the presenter secret$/, "只有演示者可以控制这个课堂：请用演示者密钥打开它"],
  // a run refused (422): the server's rules, then the lessons' parameter rules, then pydantic's words
  [/^NCCL needs one GPU per rank: (\d+) ranks, (\d+) GPUs$/, "NCCL 需要每个 rank 一块 GPU：$1 个 rank，$2 块 GPU"],
  [/^unknown lesson (\S+); known: (.+)$/, "未知的课程 $1；已有：$2"],
  [/^world_size (\d+) is not allowed for (\S+); choose one of (.+)$/, "$2 不允许 world_size $1；可选：$3"],
  [/^(\w+)=(\S+) must be divisible by the number of ranks \((\d+)\)$/, "$1=$2 必须能被 rank 数（$3）整除"],
  [/^root=(\S+) is not a rank: ranks are 0\.\.(\d+)$/, "root=$1 不是一个 rank：rank 的编号是 0..$2"],
  [/^(\S+) cuts the tensor into one chunk per rank: size=(\S+) must be divisible by the number of ranks \((\d+)\)$/,
    "$1 把张量切成每个 rank 一块：size=$2 必须能被 rank 数（$3）整除"],
  [/^recursive doubling pairs ranks r and r XOR 2ᵏ: it needs a power-of-two number of ranks, not (\d+)$/,
    "递归倍增让 rank r 与 r XOR 2ᵏ 配对：rank 数必须是 2 的幂，不能是 $1"],
  [/^the ring cuts the tensor into one chunk per rank: size=(\S+) must be divisible by the number of ranks \((\d+)\)$/,
    "环形算法把张量切成每个 rank 一块：size=$1 必须能被 rank 数（$2）整除"],
  [/^tp × pp × dp = (.+) must equal the number of ranks \((\d+)\)$/, "tp × pp × dp = $1 必须等于 rank 数（$2）"],
  [/^1F1B needs at least as many microbatches as stages: (.+?)(?: (\d+) ranks)?$/,
    (m, rule, ranks) => `1F1B 需要的 microbatch 不少于 stage：${rule}${ranks ? ` ${ranks} 个 rank` : ""}`],
  [/^ffn=(\S+) must be divisible by tp=(\S+)$/, "ffn=$1 必须能被 tp=$2 整除"],
  [/^heads=(\S+) must be divisible by the tensor-parallel degree t=(\S+): each rank takes heads\/t whole heads$/,
    "heads=$1 必须能被张量并行度 t=$2 整除：每个 rank 分到 heads/t 个完整的头"],
  [/^kv_heads=(\S+) must divide heads=(\S+): each KV head serves heads\/kv_heads queries$/,
    "kv_heads=$1 必须整除 heads=$2：每个 KV 头服务 heads/kv_heads 个 query"],
  [/^kv_heads=(\S+) must be divisible by t=(\S+) to split them across the ranks$/, "kv_heads=$1 必须能被 t=$2 整除，才能分到各 rank 上"],
  [/^with fewer KV heads than ranks each KV head is replicated on t\/kv_heads ranks: kv_heads=(\S+) must divide t=(\S+)$/,
    "KV 头少于 rank 时，每个 KV 头复制到 t/kv_heads 个 rank 上：kv_heads=$1 必须整除 t=$2"],
  [/^slow_stage=(\S+) is not a stage: stages are 0\.\.(\d+)$/, "slow_stage=$1 不是一个 stage：stage 的编号是 0..$2"],
  [/^(\S+) runs one stage per rank: virtual_stages must be 1$/, "$1 每个 rank 只跑一个 stage：virtual_stages 必须为 1"],
  [/^unknown schedule (\S+); choose one of (.+)$/, "未知的调度 $1；可选：$2"],
  [/^(\S+) interleaves rounds of (\d+) microbatches \(one per rank\): microbatches=(\S+) must be divisible by (\d+)$/,
    "$1 按每轮 $2 个 microbatch（每个 rank 一个）交错：microbatches=$3 必须能被 $4 整除"],
  [/^Value error, ([\s\S]+)$/, (m, rule) => tServer(rule, "zh")],
  [/^Input should be greater than or equal to (\S+)$/, "应大于或等于 $1"],
  [/^Input should be less than or equal to (\S+)$/, "应小于或等于 $1"],
  [/^Input should be greater than (\S+)$/, "应大于 $1"],
  [/^Input should be less than (\S+)$/, "应小于 $1"],
  [/^Input should be a valid integer\b.*$/, "应为整数"],
  [/^Input should be a valid number\b.*$/, "应为数字"],
  [/^Input should be a finite number$/, "应为有限的数"],
  [/^Input should be a valid boolean\b.*$/, "应为 true 或 false"],
  [/^Input should be a valid string$/, "应为字符串"],
  [/^Input should be (.+)$/, (m, choices) => `应为 ${choices.replace(/ or /g, " 或 ")}`],
  [/^Field required$/, "必须填写"],
  [/^Extra inputs are not permitted$/, "本课没有这个参数"],
  [/^String should have at most (\d+) characters?$/, "最多 $1 个字符"],
  [/^String should have at least (\d+) characters?$/, "至少 $1 个字符"],
  [/^String should match pattern '(.+)'$/, "应符合格式 '$1'"],
  // the hosted lab: signing in, accounts, classes (app/routes/auth.py, app/auth.py, app/accounts.py,
  // app/signin_limit.py, app/csrf.py, app/run_start.py's quotas)
  [/^wrong name or password$/, "用户名或密码错误"],
  [/^too many wrong passwords for '(.+)'; try again in (\d+) s$/, "'$1' 的密码错误次数太多；请 $2 秒后再试"],
  [/^too many failed sign-ins from your address; try again in (\d+) s$/, "从你的地址登录失败的次数太多；请 $1 秒后再试"],
  [/^the current password is wrong$/, "当前密码不对"],
  [/^accounts are off \(PARALAB_AUTH=off\)(: nobody needs to sign in)?$/,
    (m, nobody) => `本服务器没有开启账户（PARALAB_AUTH=off）${nobody ? "：无需登录" : ""}`],
  [/^sign in first$/, "请先登录"],
  [/^only an admin may do this$/, "只有管理员可以这样做"],
  [/^only an admin may see this page$/, "只有管理员可以查看这个页面"],
  [/^no user '(.+)'$/, "没有用户 '$1'"],
  [/^you cannot delete your own account; another admin can$/, "不能删除自己的账户；可以请另一位管理员删除"],
  [/^cross-site request refused: its (Origin|Referer) \((.*)\) is not this server \((.*)\); use the lab's own pages$/,
    "跨站请求被拒绝：它的 $1（$2）不是本服务器（$3）；请在本实验平台自己的页面上操作"],
  [/^a name is 1–64 letters, digits, or \. _ @ -, starting with a letter or digit$/, "用户名须为 1–64 个字母、数字或 . _ @ -，并以字母或数字开头"],
  [/^a class name is 1–64 letters, digits, or \. _ @ -$/, "班级名须为 1–64 个字母、数字或 . _ @ -"],
  [/^role is admin or student$/, "角色只能是管理员或学生"],
  [/^no class '(.+)'$/, "没有班级 '$1'"],
  [/^the name '(.+)' is taken$/, "用户名 '$1' 已被占用"],
  [/^the class '(.+)' exists$/, "班级 '$1' 已存在"],
  [/^no class has that sign-up code$/, "没有哪个班级使用这个注册码"],
  [/^a password has at least (\d+) characters$/, "密码至少要有 $1 个字符"],
  [/^the server answered (\d+)$/, "服务器返回 $1"],
  [/^a student may start at most (\d+) ranks$/, "学生最多只能启动 $1 个 rank"],
  [/^you have (\d+) runs queued or running; the limit is (\d+)$/, "你已有 $1 个运行在排队或运行中；上限是 $2 个"],
  // the hosted lab: submissions and the judge (app/routes/submissions.py, app/submissions.py,
  // workers/judge.py, workers/judge_runner.py, workers/sandbox.py)
  [/^unknown problem '(.+)'; problems: (.+)$/, "未知的题目 '$1'；已有：$2"],
  [/^no problem '(.+)'(?:; problems: (.+))?$/, (m, id, known) => `没有题目 '${id}'${known ? `；已有：${known}` : ""}`],
  [/^no submission '(.+)'$/, "没有提交 '$1'"],
  [/^you have (\d+) submissions waiting or being judged; wait for one to finish$/, "你已有 $1 个提交在等待或评测中；请等其中一个完成"],
  [/^submission (\S+) is (\w+) already; only one waiting or being judged can be cancelled$/,
    (m, id, status) => `提交 ${id} 已有结果（${ZH_BUILT[status] ?? status}）；只能取消等待中或评测中的提交`],
  [/^cancelled before it was judged$/, "在评测之前已取消"],
  [/^cancelled while it was being judged; its processes were stopped$/, "评测中被取消；它的进程已被停止"],
  [/^the server restarted before it was judged; submit again$/, "评测之前服务器重启了；请重新提交"],
  [/^the judge failed: ([\s\S]+)$/, "评测程序出错：$1"],
  [/^the submission is (\d+) bytes; the limit is (\d+)$/, "提交的代码有 $1 字节；上限是 $2 字节"],
  [/^the code does not parse: line (\d+): ([\s\S]+)$/, "代码无法解析：第 $1 行：$2"],
  [/^line (\d+): relative imports are not allowed$/, "第 $1 行：不允许相对导入"],
  [/^line (\d+): importing '(.+)' is not allowed; allowed: (.+)$/, "第 $1 行：不允许导入 '$2'；允许导入的有：$3"],
  [/^the code does not define (.+)$/, "代码没有定义 $1"],
  [/^no sandbox is available here \(bubblewrap\); the operator has not allowed unsandboxed code$/,
    "这里没有可用的沙箱（bubblewrap）；管理员没有允许在沙箱之外运行代码"],
  [/^stopped: ([\s\S]+)$/, (m, why) => `已停止：${tServer(why, "zh")}`],
  [/^wall-clock limit \((\S+) s\)$/, "超过墙钟时间上限（$1 秒）"],
  [/^CPU-time limit \((\S+) s\)$/, "超过 CPU 时间上限（$1 秒）"],
  [/^memory limit \((\S+) MiB\)$/, "超过内存上限（$1 MiB）"],
  [/^file-size limit \((\S+) MiB\)$/, "超过文件大小上限（$1 MiB）"],
  [/^process limit \((\d+) processes\)$/, "超过进程数上限（$1 个进程）"],
  [/^cancelled$/, "已取消"],
  [/^the judge produced no result \(([\s\S]*)\)$/, (m, tail) => `评测程序没有给出结果（${tail === "no output" ? "没有输出" : tail}）`],
  [/^your code raised while loading: ([\s\S]+)$/, (m, trace) => `你的代码在加载时抛出异常：${zhLearnerTrace(trace)}`],
  [/^the ranks did not finish within (\S+) s — are they waiting for each other \(a deadlock: a call some rank never makes\)\?$/,
    "各 rank 在 $1 秒内没有结束 — 它们是不是在互相等待（死锁：某个 rank 永远不会发出的调用）？"],
  [/^rank (\d+) ended without reporting \(killed\?\)$/, "rank $1 没有报告结果就结束了（被终止了？）"],
  [/^rank (\d+): ([\s\S]+)$/, (m, rank, trace) => `rank ${rank}：${zhLearnerTrace(trace)}`],
];

/** Strings the views build with `t()`, `{name}` standing for what they fill in. */
const ZH_BUILT = {
  // what a rank does, and what an event says (replay.js)
  "raised {error}": "抛出 {error}",
  "waits at the gate before {call}": "停在 {call} 之前，等待放行",
  "computing {name}": "正在计算 {name}",
  "{call} — waiting for rank {ranks}": "{call} — 等待 rank {ranks}",
  "{call} — waiting for ranks {ranks}": "{call} — 等待 rank {ranks}",
  "{op} to rank {peer}": "向 rank {peer} {op}",
  "{op} to rank {peer} (tag {tag})": "向 rank {peer} {op}（tag {tag}）",
  "{op} to any rank": "向任意 rank {op}",
  "{op} to any rank (tag {tag})": "向任意 rank {op}（tag {tag}）",
  "{op} from rank {peer}": "从 rank {peer} {op}",
  "{op} from rank {peer} (tag {tag})": "从 rank {peer} {op}（tag {tag}）",
  "{op} from any rank": "从任意 rank {op}",
  "{op} from any rank (tag {tag})": "从任意 rank {op}（tag {tag}）",
  "queued": "排队中",
  "running": "运行中",
  "paused": "已暂停",
  "failed": "失败",
  "cancelled": "已取消",
  "stopped ({status})": "已停止（{status}）",
  "checked {name}: passed": "已校验 {name}：通过",
  "checked {name}: FAILED": "已校验 {name}：失败",
  "has {name}": "得到 {name}",
  "reported {name}": "报告了 {name}",
  "finished {name}": "完成了 {name}",
  "working": "工作中",
  "server": "服务器",
  "{who}: {what}": "{who}：{what}",
  "run queued": "运行排队中",
  "run queued (position {position} in the queue)": "运行排队中（队列第 {position} 位）",
  "run running": "运行中",
  "run done": "运行完成",
  "run failed": "运行失败",
  "run cancelled": "运行已取消",
  "starts {name}": "开始 {name}",
  "ends {name}": "结束 {name}",
  "{op} begins ({group} #{cseq})": "{op} 开始（{group} #{cseq}）",
  "{op} ends ({group} #{cseq})": "{op} 结束（{group} #{cseq}）",
  "{call} begins": "{call} 开始",
  "{call} ends": "{call} 结束",
  "stops at the gate before {call}": "停在 {call} 之前，等待放行",
  "released into {call}": "已放行，进入 {call}",
  "shows {name} [{shape}]": "给出 {name} [{shape}]",
  "check “{name}” passed (max |error| {error})": "校验“{name}”通过（最大 |误差| {error}）",
  "check “{name}” FAILED (max |error| {error})": "校验“{name}”失败（最大 |误差| {error}）",
  "finished its program; waits for the others": "已跑完自己的程序，等待其他 rank",
  "finished its program": "跑完了自己的程序",
  "log": "日志",
  "info": "信息",
  "warning": "警告",
  "error": "错误",
  // the run's status and failure (status.js, hang.js)
  "(position {position})": "（队列第 {position} 位）",
  "run {id}": "运行 {id}",
  "no call yet": "还没有调用",
  "last lines": "最后所在的行",
  "traceback": "调用栈",
  "what the other ranks reported": "其他 rank 报告的错误",
  "The run hung": "运行卡住了",
  "— stopped after {waited} without progress": "— {waited} 内没有进展，已停止",
  "mismatch": "不匹配类型",
  "stuck in": "卡在",
  "group {group}, collective #{cseq}": "组 {group} 的第 {cseq} 次集合通信",
  "group {group}": "组 {group}",
  "unpaired": "未配对",
  "missing": "缺席",
  "none: every member arrived": "无：每个成员都到了",
  "Some members of the group never called this collective, so the others wait for them forever: a collective is a rendezvous.":
    "组里有成员始终没有调用这次集合通信，其他成员只能一直等下去：集合通信是一次会合。",
  "The members called different collectives as the same call of the group: they can never pair up.":
    "成员们在组内同一次调用处调用了不同的集合通信：它们永远配不上对。",
  "The members passed tensors of different shapes to the same collective.": "成员们传给同一次集合通信的张量形状不同。",
  "A send and a recv pair up only when they name each other and use the same tag; these do not.":
    "send 和 recv 只有互相指明对方、且 tag 相同时才能配对；这里的不满足。",
  "Every member entered the call and none came out.": "每个成员都进入了调用，却没有一个出来。",
  "Flight recorder": "Flight recorder（飞行记录器）",
  "— per rank and group, the last call begun and the last completed (#: the group's sequence number)":
    "— 按 rank 和组列出最后开始的调用与最后完成的调用（#：组内序号）",
  "last begun": "最后开始",
  "last completed": "最后完成",
  "rank {rank} began this call and never completed it": "rank {rank} 开始了这个调用，却始终没有完成",
  // checks (checks.js)
  "No tensors came with this check.": "这项校验没有附带张量。",
  "rank {rank} (wrong)": "rank {rank}（错误）",
  "reference": "参考值",
  "difference": "差值",
  "Compares {detail}.": "比较：{detail}。",
  "result": "结果",
  "max |error|": "最大 |误差|",
  "tolerance": "容差",
  "✓ passed": "✓ 通过",
  "✗ FAILED": "✗ 失败",
  "rank {rank}'s numbers against the reference": "rank {rank} 的数值与参考值对比",
  // communication (comm.js)
  "✓ measured = expected": "✓ 实测 = 预期",
  "{bytes} still to come": "还差 {bytes}",
  "✗ differs by {bytes}": "✗ 相差 {bytes}",
  "What rank 0 put into each call (nccl-tests' size convention), how long the call took, and its bandwidths":
    "rank 0 放进每次调用的数据量（按 nccl-tests 对消息大小的约定）、调用用时及其带宽",
  "call": "调用",
  "what for": "用途",
  "bytes": "字节",
  "time": "时间",
  "the shortest time among the members: the last to arrive waits for no one": "成员中最短的用时：最后到达的成员不用等任何人",
  "the α–β model's prediction for this call": "α–β 模型对这次调用的预测",
  "algorithm bandwidth = bytes / time": "算法带宽 = 字节数 / 时间",
  "bus bandwidth = algbw × factor (nccl-tests), comparable with the link's speed": "总线带宽 = algbw × 系数（nccl-tests），可与链路速度对比",
  "factor": "系数",
  "measured total": "实测合计",
  "expected by the lesson:": "本课的预期：",
  "formula:": "公式：",
  // the collective (collective.js, collective-layout.js)
  "ranks {ranks}": "rank {ranks}",
  "Waiting: {arrived} arrived; {missing} not yet — a collective starts only when every member calls it.":
    "等待中：{arrived} 已到达，{missing} 还没到 — 集合通信要等每个成员都调用后才开始。",
  "Finished: {ranks}.": "已完成：{ranks}。",
  "Every rank arrived: {story}.": "每个 rank 都已到达：{story}。",
  "Done: {story}.": "完成：{story}。",
  "data moves between the ranks": "数据在各 rank 之间移动",
  "the collective completed": "集合通信已完成",
  "every rank's block flows into one sum, and the whole sum goes back to every rank": "每个 rank 的块汇入同一个和，完整的和再发回每个 rank",
  "each rank's chunk is copied to every rank; the chunks are concatenated in rank order": "每个 rank 的块复制到每个 rank；各块按 rank 顺序拼接",
  "chunk i of every rank flows to rank i, where the chunks are summed": "每个 rank 的第 i 块流向 rank i，在那里求和",
  "the root's block is copied to every rank": "root 的块复制到每个 rank",
  "every rank's block flows into a sum that only the root keeps": "每个 rank 的块汇入一个和，只有 root 保留结果",
  "each rank sends chunk j of its block to rank j": "每个 rank 把自己块中的第 j 块发给 rank j",
  "the root sends chunk i of its block to rank i": "root 把自己块中的第 i 块发给 rank i",
  "every rank's block is collected by the root": "每个 rank 的块都被 root 收集",
  "no data: every rank waits until all have arrived": "没有数据：每个 rank 都等到所有 rank 到达",
  "{op} among ranks {ranks}: {phase}": "{op}，参与的 rank：{ranks}；{phase}",
  "moving": "传输中",
  "sending": "发送中",
  "group {group} #{cseq}": "组 {group} #{cseq}",
  "{bytes} per rank": "每个 rank {bytes}",
  "(the last collective before this step)": "（这一步之前的最后一次集合通信）",
  "chunk j goes to rank j": "第 j 块发往 rank j",
  "the sum": "和",
  "its summed chunk": "求和后的那一块",
  "all chunks, in rank order": "所有块，按 rank 顺序",
  "unchanged": "不变",
  "its own block": "自己的块",
  "the root's block": "root 的块",
  // tensors and heatmaps (tensors.js, heatmap.js, hover.js)
  "rows {range}": "第 {range} 行",
  "columns {range}": "第 {range} 列",
  "all of it": "全部",
  "ranks {ranks} each hold this block": "rank {ranks} 各持有这一块",
  "×{n} copies": "×{n} 份",
  "{n} block replicated ×{copies}": "{n} 块被复制 ×{copies}",
  "{n} blocks replicated ×{copies}": "{n} 块被复制 ×{copies}",
  "ranks {ranks}: {where} — the same block, ×{n} copies": "rank {ranks}：{where} — 同一块，×{n} 份",
  "[{shape}] on each rank": "[{shape}]，每个 rank 各一份",
  "{name}: heatmap of a {rows}×{cols} matrix; hover for values": "{name}：{rows}×{cols} 矩阵的热图；悬停查看数值",
  "colour scale from {min} to {max}": "色标：{min} 到 {max}",
  "{where}: not received yet": "{where}：尚未收到",
  "(block mean)": "（块平均）",
  // before → after (origins.js)
  "not shown yet": "尚未显示",
  "not yet": "还没有",
  "rank {rank}, element {index} = {value}": "rank {rank} 的第 {index} 个元素 = {value}",
  "goes to rank {dest}": "发往 rank {dest}",
  "rank {rank}, block {index} (mean {value}) — from {whence}": "rank {rank} 的第 {index} 块（平均 {value}）— 来自 {whence}",
  "rank {rank}, element {index} = {value} — from {whence}": "rank {rank} 的第 {index} 个元素 = {value} — 来自 {whence}",
  "{op}: {story}.": "{op}：{story}。",
  "Long tensors are drawn block by block: each cell names the rank(s) its block came from.": "长张量按块绘制：每个格子标出它那一块来自哪些 rank。",
  "Hover a number on the right to see where it came from.": "把鼠标悬停在右边的数上，看它来自哪里。",
  "from rank {rank}": "来自 rank {rank}",
  "stripes: combined from several ranks": "条纹：由多个 rank 合成",
  "rank {rank}, block {index}: from {from}.": "rank {rank} 的第 {index} 块：来自 {from}。",
  "rank {rank}, element {index} = {value}: from {from}.": "rank {rank} 的第 {index} 个元素 = {value}：来自 {from}。",
  "element {index} of ranks {ranks}, combined": "rank {ranks} 的第 {index} 个元素合成",
  "element {index} of rank {rank}": "rank {rank} 的第 {index} 个元素",
  // send / recv, step by step (ring.js)
  "{step}: {n} transfers between {world} ranks": "{step}：{world} 个 rank 之间的 {n} 次传输",
  "chunk {n}": "第 {n} 块",
  "all": "全部",
  "its tensor (not shown)": "它的张量（未显示）",
  "no buffer shown yet": "还没有显示缓冲区",
  "after {step}": "{step} 之后",
  "rank {rank}'s recv waits": "rank {rank} 的 recv 在等待",
  "rank {rank}'s recv waits (tag {tag})": "rank {rank} 的 recv 在等待（tag {tag}）",
  "steps so far": "目前的各步",
  "{delivered} of {n} sends delivered in this step": "这一步 {n} 次 send 中已送达 {delivered} 次",
  "{n} recv waiting for a send": "{n} 个 recv 在等待 send",
  "{n} recvs waiting for a send": "{n} 个 recv 在等待 send",
  "{n} send held at a gate (dotted)": "{n} 个 send 在等待放行（点线）",
  "{n} sends held at a gate (dotted)": "{n} 个 send 在等待放行（点线）",
  "dashed outline: the chunk being received, solid: the chunk sent": "虚线框：正在接收的块，实线框：发出的块",
  "— ring step {k} of 2(p−1) = {total}": "— 环形算法第 {k} 步，共 2(p−1) = {total} 步",
  "— step {k} of log₂p = {total}": "— 第 {k} 步，共 log₂p = {total} 步",
  "algorithm": "算法",
  "steps": "步数",
  "formula": "公式",
  "elements each rank sends": "每个 rank 发送的元素数",
  "ring (reduce-scatter + all-gather)": "环形（reduce-scatter + all-gather）",
  "recursive doubling": "递归倍增",
  // step mode (stepper.js)
  "stopped (run {status})": "已停止（运行{status}）",
  "its program is done: it waits for the others": "它的程序已跑完：在等待其他 rank",
  "waits at {call}": "停在 {call}",
  "blocked inside {call}": "阻塞在 {call} 中",
  "waiting for {ranks} to enter it": "等待 {ranks} 进入",
  "inside {call}": "在 {call} 中",
  "every member arrived: the data moves": "每个成员都已到达：数据正在传输",
  "waiting for a matching recv on rank {peer}": "等待 rank {peer} 上匹配的 recv",
  "waiting for a matching send on rank {peer}": "等待 rank {peer} 上匹配的 send",
  "waiting for a matching recv on any rank": "等待任意 rank 上匹配的 recv",
  "waiting for a matching send on any rank": "等待任意 rank 上匹配的 send",
  "starting": "正在启动",
  "computing until its next call": "一直计算到下一个调用",
  "{ranks} waits at a gate": "{ranks} 在等待放行",
  "{ranks} wait at a gate": "{ranks} 在等待放行",
  "rank {rank} is {what} until {ranks} enters — a collective is a rendezvous": "rank {rank} {what}，直到 {ranks} 进入 — 集合通信是一次会合",
  "rank {rank} is {what} until {ranks} enter — a collective is a rendezvous": "rank {rank} {what}，直到 {ranks} 进入 — 集合通信是一次会合",
  "rank {rank} is {what}, {detail}": "rank {rank} {what}，{detail}",
  "{parts}.": "{parts}。",
  "; ": "；",
  "This run was stepped by hand and has ended. Step back with": "这次运行是手动单步执行的，已经结束。按",
  "to see, at each event, which rank waited at which call.": "往回走，可以看到每个事件时哪个 rank 在哪个调用处等待。",
  "the run has ended: this is where the ranks were at this step": "运行已结束：这是各 rank 在这一步时所处的位置",
  "every rank stops before each collective and send/recv": "每个 rank 在每次集合通信和 send/recv 之前停下",
  "running on without stopping (p pauses again)": "不停地运行下去（按 p 再次暂停）",
  "These are the ranks now; the pictures below show seq {seq} of {total}.": "这是各 rank 现在的状态；下面的图显示的是第 {seq} 个事件（共 {total} 个）。",
  "catches up.": "跟上最新。",
  "release rank {rank} (key {rank})": "放行 rank {rank}（按键 {rank}）",
  "release rank {rank}": "放行 rank {rank}",
  "release": "放行",
  "release that rank ·": "放行该 rank ·",
  "or": "或",
  "release all ·": "全部放行 ·",
  "continue ·": "继续 ·",
  "pause ·": "暂停 ·",
  "step through what happened": "逐步查看发生了什么",
  "Not connected to the run right now; try again in a moment.": "现在没有连上这次运行；请稍后再试。",
  "There is no rank {rank} in this run.": "这次运行没有 rank {rank}。",
  "Rank {rank} is not waiting at a gate: it is inside a call.": "rank {rank} 没有在等待放行：它正在一个调用中。",
  "Rank {rank} is not waiting at a gate.": "rank {rank} 没有在等待放行。",
  "No rank is waiting at a gate.": "没有 rank 在等待放行。",
  // the source (source.js)
  "No source.": "没有源代码。",
  "source files": "源文件",
  "lesson source": "本课源代码",
  "rank {rank} waits at the gate before this line's call": "rank {rank} 停在这一行的调用之前，等待放行",
  "rank {rank} is inside this line's call": "rank {rank} 正在这一行的调用中",
  "rank {rank} was last here": "rank {rank} 最后停在这里",
  "(its last call)": "（它的最后一次调用）",
  // the pipeline schedule (pipeline.js)
  "stage {stages}": "stage {stages}",
  "stages {stages}": "stage {stages}",
  "rank {rank} · stage {stage} · {name} of microbatch {mb}": "rank {rank} · stage {stage} · microbatch {mb} 的 {name}",
  "(running)": "（运行中）",
  "slow ×{factor}": "慢 ×{factor}",
  "busy {percent}%": "忙碌 {percent}%",
  "time this rank computed, as a share of the pipeline's makespan so far": "这个 rank 的计算时间占流水线目前总时长的比例",
  "the ideal {schedule} grid: {ranks} ranks × {cols} slots": "理想的 {schedule} 网格：{ranks} 个 rank × {cols} 个时隙",
  "slot {slot}: {action}": "时隙 {slot}：{action}",
  " overlapped with ": "，同时 ",
  "stage {stage} {kind} of microbatch {mb}": "stage {stage}：microbatch {mb} 的{kind}",
  "forward": "前向",
  "backward": "反向",
  "input gradient (½ of B)": "输入梯度（B 的一半）",
  "weight gradient (½ of B)": "权重梯度（B 的一半）",
  "slots of the ideal schedule: every action one unit of time": "理想调度的时隙：每个动作占一个单位时间",
  "measured": "实测",
  "so far": "目前",
  "ideal grid": "理想网格",
  "idle ÷ (ranks × makespan), timed by the ranks": "空闲 ÷ (rank 数 × 总时长)，由各 rank 计时",
  "arrives at the end of the run": "运行结束时给出",
  "from the blocks drawn so far; the ranks report the final number at the end": "根据目前画出的块估算；各 rank 在结束时报告最终数值",
  "idle slots of the grid below": "下方网格中的空闲时隙",
  "Bubble fraction": "气泡比例",
  "the share of rank-time spent idle": "rank 时间中空闲所占的比例",
  "with p = {p} ranks, m = {m} microbatches": "其中 p = {p} 个 rank，m = {m} 个 microbatch",
  "with p = {p} ranks, m = {m} microbatches, v = {v} stages per rank":
    "其中 p = {p} 个 rank，m = {m} 个 microbatch，每个 rank v = {v} 个 stage",
  "no closed form — this schedule fills the bubble with weight-gradient (W) work; the grid's idle slots are the prediction":
    "没有闭式公式 — 这个调度用权重梯度（W）的计算填充气泡；网格中的空闲时隙就是预测值",
  "Measured is {gap} above the grid: the grid counts every action as one slot and nothing else, while the ranks also spend time in send/recv{slow}.":
    "实测比网格高 {gap}：网格只把每个动作算作一个时隙，而各 rank 还要在 send/recv 上花时间{slow}。",
  " — and stage {stage} is {factor}× slower, so every other rank waits for it": "；而且 stage {stage} 慢 {factor} 倍，其他 rank 都要等它",
  "Measured matches the grid within 0.02.": "实测与网格相差不到 0.02。",
  "bound {bound} = {value}": "上限 {bound} = {value}",
  "peak {peak}": "峰值 {peak}",
  "peak {peak}, bound {bound} = {value}": "峰值 {peak}，上限 {bound} = {value}",
  "rank {rank}: {n} microbatch of activations held now; peak {peak}": "rank {rank}：现在持有 {n} 个 microbatch 的激活；峰值 {peak}",
  "rank {rank}: {n} microbatches of activations held now; peak {peak}": "rank {rank}：现在持有 {n} 个 microbatch 的激活；峰值 {peak}",
  "(bound {bound} = {value})": "（上限 {bound} = {value}）",
  "{schedule}, paralab's own engine (engine.py)": "{schedule}，paralab 自己的引擎（engine.py）",
  "torch.distributed.pipelining's Schedule{schedule}": "torch.distributed.pipelining 的 Schedule{schedule}",
  "p = {p} ranks": "p = {p} 个 rank",
  "m = {m} microbatches": "m = {m} 个 microbatch",
  "v = {v} stages per rank": "每个 rank v = {v} 个 stage",
  "F {f} ms, B {b} ms of added compute": "额外计算：F {f} ms，B {b} ms",
  "stage {stage} {factor}× slower": "stage {stage} 慢 {factor} 倍",
  "lighter: a rank's second stage": "浅色：rank 的第二个 stage",
  "recv (waiting)": "recv（等待中）",
  "from a send to the recv that took it": "从 send 指向接收它的 recv",
  "idle: the bubble": "空闲：气泡",
  "numbers on the blocks: microbatches": "块上的数字：microbatch 编号",
  "The Gantt chart of the schedule fills in here as the stages run.": "各 stage 运行时，调度的甘特图会在这里逐步画出。",
  "Measured": "实测",
  "each rank's stage actions as they ran; rows grow as events arrive": "每个 rank 的 stage 动作按实际运行绘制；随事件到达逐行增长",
  "time since the first stage action (ms)": "从第一个 stage 动作起的时间（ms）",
  "pipeline Gantt chart of {p} ranks": "{p} 个 rank 的流水线甘特图",
  "No stage has computed yet at this step.": "这一步还没有 stage 开始计算。",
  "Ideal": "理想",
  "the order paralab's engine runs, each action one slot, as early as its inputs allow": "paralab 引擎的运行顺序，每个动作一个时隙，输入一就绪就尽早执行",
  "torch's own order of actions for Schedule{schedule}, each one slot, as early as its inputs allow":
    "torch 为 Schedule{schedule} 定义的动作顺序，每个一个时隙，输入一就绪就尽早执行",
  "Faded: actions the ranks have not run yet at this step; outlined: running now.": "淡色：这一步各 rank 还没运行的动作；描边：正在运行。",
  "⚠ torch's grid is wrong here — corrected:": "⚠ torch 的网格在这里有误 — 已更正：",
  "The grid above is the corrected one: the order the ranks actually ran.": "上面的网格是更正后的：即各 rank 实际运行的顺序。",
  "The ideal grid arrives with rank 0's schedule event.": "理想网格随 rank 0 的 schedule 事件一起到达。",
  "Activations in flight": "在途激活",
  "microbatches whose activations each rank keeps for its backward; same time axis as the chart above":
    "每个 rank 为反向保留激活的 microbatch 数；时间轴与上图相同",
  "activations in flight on each rank over time": "每个 rank 上在途激活随时间的变化",
  "Peak activations": "激活峰值",
  "GPipe: every rank holds all m": "GPipe：每个 rank 持有全部 m 个",
  "1F1B: rank r at most p − r": "1F1B：rank r 最多 p − r 个",
  "per rank": "每个 rank",
  "peak": "峰值",
  "bound {bound}": "上限 {bound}",
  "bound": "上限",
  // the timeline (timeline.js, gantt.js)
  "(to rank {peer})": "（发往 rank {peer}）",
  "(from rank {peer})": "（来自 rank {peer}）",
  "bucket {b}": "桶 {b}",
  "bucket {b} all-reduce": "桶 {b} 的 all-reduce",
  "in flight": "进行中",
  "rank {rank} computes and communicates at once: {time}": "rank {rank} 同时在计算和通信：{time}",
  "{percent}% hidden": "{percent}% 被隐藏",
  "share of this rank's all-reduce time that ran while it was still computing": "这个 rank 的 all-reduce 时间中与计算重叠的比例",
  "timeline of {n} ranks: compute above, communication below": "{n} 个 rank 的时间线：上方计算，下方通信",
  "No compute or communication yet at this step.": "这一步还没有计算或通信。",
  "optimizer": "优化器",
  "other compute": "其他计算",
  "TP collective": "TP 集合通信",
  "DP collective": "DP 集合通信",
  "recv (waiting for data)": "recv（等待数据）",
  "compute and all-reduce at once": "计算与 all-reduce 同时进行",
  "No all-reduce yet at this step.": "这一步还没有 all-reduce。",
  "{percent}% of the all-reduce time ran while the ranks were still computing": "all-reduce 时间中有 {percent}% 是在各 rank 仍在计算时进行的",
  "({hidden} of {total} per rank).": "（每个 rank {total} 中的 {hidden}）。",
  "Each bucket's all-reduce is launched from a gradient hook the moment its last gradient is ready, and waited on only after backward: it travels while the earlier layers' backward runs.":
    "每个桶的最后一个梯度一就绪，梯度钩子就发起它的 all-reduce，直到反向结束后才等待它完成：通信在前面各层的反向计算进行时传输。",
  "Naive data parallel starts every all-reduce after the whole backward: nothing overlaps, the ranks wait for the network.":
    "朴素的数据并行在整个反向结束后才开始每次 all-reduce：没有任何重叠，各 rank 都在等网络。",
  "time since the first block (ms)": "从第一个块起的时间（ms）",
  "timeline of each rank": "每个 rank 的时间线",
  // process groups (topology.js)
  "{dp} replicas × {pp} stages × {tp} tensor-parallel ranks": "{dp} 个副本 × {pp} 个 stage × {tp} 个张量并行 rank",
  "DP replica {d}": "DP 副本 {d}",
  "the model (one replica)": "模型（一个副本）",
  "{kind} group {ranks}: {op}": "{kind} 组 {ranks}：{op}",
  "replica {d}, stage {st}, tensor-parallel rank {tp}": "副本 {d}，stage {st}，张量并行 rank {tp}",
  "{op} among ranks {ranks}": "{op}，参与的 rank：{ranks}",
  "(waiting for {ranks})": "（等待 {ranks}）",
  "{n} more group busy": "另有 {n} 个组在通信",
  "{n} more groups busy": "另有 {n} 个组在通信",
  "No group communicates at this step: the ranks compute.": "这一步没有组在通信：各 rank 在计算。",
  "DP sync: each rank reports the bytes it all-reduced across replicas at the end of the run.":
    "DP 同步：运行结束时，每个 rank 报告它在副本之间 all-reduce 的字节数。",
  "{ratio}× the expected DP traffic.": "DP 流量是预期的 {ratio} 倍。",
  "The gradients are all-reduced after every one of the m = {m} microbatches instead of once after the last backward: the same numbers, m times the bytes.":
    "梯度在 m = {m} 个 microbatch 的每一个之后都 all-reduce 了一次，而不是在最后一次反向之后只做一次：结果相同，字节数却是 m 倍。",
  "More gradient bytes crossed the replicas than one all-reduce of each gradient shard.":
    "在副本之间传输的梯度字节数多于每个梯度分片做一次 all-reduce 所需。",
  "The right number of bytes at the wrong time:": "字节数对了，时机错了：",
  "the sync runs before the last microbatch's backward, so that microbatch's gradient is never averaged — the gradient checks fail.":
    "同步在最后一个 microbatch 的反向之前就执行了，所以那个 microbatch 的梯度从未被平均 — 梯度校验失败。",
  "✓ as expected:": "✓ 符合预期：",
  "one all-reduce of each gradient shard, once, after the last backward.": "每个梯度分片在最后一次反向之后做一次 all-reduce。",
  "DP gradient sync per rank:": "每个 rank 的 DP 梯度同步：",
  "measured ·": "实测 ·",
  "{bytes} expected": "预期 {bytes}",
  "the same on all {n} ranks": "全部 {n} 个 rank 相同",
  "the same on the {n} ranks reported so far": "目前已报告的 {n} 个 rank 相同",
  "differs between all {n} ranks": "全部 {n} 个 rank 之间不同",
  "differs between the {n} ranks reported so far": "目前已报告的 {n} 个 rank 之间不同",
  "The process-group grid appears with rank 0's topology event.": "进程组网格随 rank 0 的 topology 事件出现。",
  "{n} ranks": "{n} 个 rank",
  "TP group: a row of a plane": "TP 组：一个平面中的一行",
  "PP: a column, send → recv between stages": "PP：一列，stage 之间 send → recv",
  "DP group: the same place in every plane": "DP 组：每个平面中的同一位置",
  "calls so far": "目前的调用次数",
  "bytes (each call's size, once)": "字节数（每次调用的大小，只计一次）",
  "collectives": "集合通信",
  // memory per rank (memory.js) and numbers (numbers.js)
  "parameters": "参数",
  "gradients": "梯度",
  "optimizer state": "优化器状态",
  "{part}: measured {measured}, formula {expected}": "{part}：实测 {measured}，公式 {expected}",
  "{part}: measured {measured}, formula {expected}, plain data parallel {full}":
    "{part}：实测 {measured}，公式 {expected}，朴素数据并行 {full}",
  "plain data parallel: {bytes}": "朴素数据并行：{bytes}",
  "formula: {bytes}": "公式：{bytes}",
  "ZeRO stage {stage}: each rank reports the bytes it holds after its last optimizer step — the bars fill in at the end of the run.":
    "ZeRO stage {stage}：每个 rank 在最后一次优化器 step 之后报告它持有的字节数 — 条形图在运行结束时填满。",
  "Ψ = {psi} parameters": "Ψ = {psi} 个参数",
  "N = {n} ranks": "N = {n} 个 rank",
  "bytes per element: P = {P}, G = {G}, K = {K} (float32; Adam keeps two moments)":
    "每个元素的字节数：P = {P}，G = {G}，K = {K}（float32；Adam 保存两个动量）",
  "total": "合计",
  "measured = the formula": "实测 = 公式",
  "measured differs from the formula": "实测与公式不同",
  "formula {bytes}": "公式 {bytes}",
  "{ratio}× less than plain DP ({bytes})": "比朴素 DP 少 {ratio} 倍（{bytes}）",
  "measured on the rank": "在 rank 上实测",
  "the formula": "公式",
  "plain data parallel: all of it on every rank": "朴素数据并行：每个 rank 上都放全部",
  "symbols:": "符号：",
  "Communication per step arrives with the memory numbers.": "每个 step 的通信量随内存数值一起到达。",
  "communicated per step:": "每步的通信量：",
  "{n} elements": "{n} 个元素",
  "— expected": "— 预期",
  "{how}. Stages 1 and 2 move what plain DP's all-reduce moves (2Ψ); stage 3 pays one Ψ more to keep only 1/N of the weights.":
    "{how}。stage 1 和 2 的通信量与朴素 DP 的 all-reduce 相同（2Ψ）；stage 3 多付一个 Ψ，换来每个 rank 只保留 1/N 的权重。",
  "all-gather each layer's weights before its forward (Ψ), again before its backward (Ψ), reduce-scatter the gradients (Ψ)":
    "每层前向之前 all-gather 它的权重（Ψ），反向之前再 all-gather 一次（Ψ），再 reduce-scatter 梯度（Ψ）",
  "reduce-scatter the gradients (Ψ), then all-gather the updated pieces (Ψ)": "reduce-scatter 梯度（Ψ），再 all-gather 更新后的各片（Ψ）",
  "KV cache copies": "KV 缓存副本数",
  "how many ranks store each KV head's cache: with fewer KV heads than ranks (GQA), every KV head — its Wk, Wv and its K/V cache — is replicated":
    "每个 KV 头的缓存存在多少个 rank 上：KV 头少于 rank（GQA）时，每个 KV 头 — 它的 Wk、Wv 和 K/V 缓存 — 都会被复制",
  "n_kv ≥ t, so 1": "n_kv ≥ t，所以是 1",
  "here {worked}": "这里 {worked}",
  "expected {value} — ✓ as predicted": "预期 {value} — ✓ 与预测一致",
  "expected {value} — ✗ differs": "预期 {value} — ✗ 不一致",
  // the cost model (cost.js)
  "time (log)": "时间（对数）",
  "measured and predicted time of {n} message sizes, log-log": "{n} 种消息大小的实测与预测时间，双对数坐标",
  "message size m (bytes, log scale)": "消息大小 m（字节，对数坐标）",
  "{size}: predicted {time}": "{size}：预测 {time}",
  "{size}: measured {time}": "{size}：实测 {time}",
  "α–β model of {name} on p = {p}:": "{name} 在 p = {p} 时的 α–β 模型：",
  "ring {op}": "环形 {op}",
  "tree {op}": "树形 {op}",
  "fitted from ping-pong between ranks 0 and 1:": "由 rank 0 与 rank 1 之间的乒乓测试拟合：",
  "per message": "每条消息",
  "α and β arrive when the sweep ends.": "扫描结束后给出 α 和 β。",
  "measured (median of 5)": "实测（5 次的中位数）",
  "α–β prediction": "α–β 预测",
  "size m": "大小 m",
  "predicted": "预测",
  "ratio": "比值",
  "No sweep points yet at this step.": "这一步还没有扫描数据点。",
  // the tables for screen readers and slides (tables.js, tables-parallel.js)
  "{min} … {max}, mean {mean}": "{min} … {max}，平均 {mean}",
  "{shape} at ({offset})": "{shape} 位于 ({offset})",
  "min … max": "最小 … 最大",
  "Measured schedule so far: each rank's stage actions in the order they ran": "目前的实测调度：每个 rank 的 stage 动作按运行顺序排列",
  "actions so far": "目前的动作",
  "stages": "stage",
  "busy": "忙碌",
  "busy share": "忙碌比例",
  "none yet": "还没有",
  "Ideal {schedule} grid: each action one slot (–: idle); what the ranks have done at this step":
    "理想的 {schedule} 网格：每个动作一个时隙（–：空闲）；以及这一步各 rank 已完成的动作",
  "slot {c}": "时隙 {c}",
  "{done} of {total}": "{done}/{total}",
  "Bubble fraction: the share of rank-time spent idle": "气泡比例：rank 时间中空闲所占的比例",
  "value": "数值",
  "how": "算法",
  "idle ÷ (ranks × makespan), timed by the ranks at the end of the run": "空闲 ÷ (rank 数 × 总时长)，运行结束时由各 rank 计时",
  "idle slots of the ideal grid": "理想网格中的空闲时隙",
  "no closed form": "没有闭式公式",
  "the grid's idle slots are the prediction": "网格中的空闲时隙就是预测值",
  "with p = {p}, m = {m}": "其中 p = {p}，m = {m}",
  "with p = {p}, m = {m}, v = {v}": "其中 p = {p}，m = {m}，v = {v}",
  "Activations in flight: microbatches each rank holds for its backward": "在途激活：每个 rank 为反向保留的 microbatch 数",
  "now": "现在",
  "peak bytes": "峰值字节数",
  "{n} so far": "目前 {n}",
  "compute": "计算",
  "{kind} collective": "{kind} 集合通信",
  "Timeline: {n} spans so far, times in ms since the first began": "时间线：目前 {n} 个区间，时间为从第一个区间开始起的 ms 数",
  "kind": "类型",
  "name": "名称",
  "start": "开始",
  "end": "结束",
  "duration": "时长",
  "yes: {calls}": "是：{calls}",
  "no": "否",
  "{kind} group {index}": "{kind} 组 {index}",
  "Process groups: tp = {tp} × pp = {pp} × dp = {dp}; which communicate at this step":
    "进程组：tp = {tp} × pp = {pp} × dp = {dp}；这一步哪些组在通信",
  "members (ranks)": "成员（rank）",
  "active now": "当前是否通信",
  "Each rank's place: rank = dp·(pp·tp) + stage·tp + tp_rank": "每个 rank 的位置：rank = dp·(pp·tp) + stage·tp + tp_rank",
  "replica (dp)": "副本（dp）",
  "stage (pp)": "stage（pp）",
  "DP gradient sync per rank": "每个 rank 的 DP 梯度同步",
  "expected": "预期",
  "{part} measured": "{part}（实测）",
  "{part} formula": "{part}（公式）",
  "total measured": "实测合计",
  "Memory per rank: bytes measured on the rank, and by the ZeRO formula": "每个 rank 的内存：在 rank 上实测的字节数，以及按 ZeRO 公式算出的字节数",
  "Communicated per step": "每步的通信量",
  "elements": "元素数",
  "Numbers the ranks measured": "各 rank 实测的数值",
  "metric": "指标",
  "unit": "单位",
  "verdict": "结论",
  "✓ as predicted": "✓ 与预测一致",
  "✗ differs": "✗ 不一致",
  "Cost model sweep: measured time against the α–β prediction": "代价模型扫描：实测时间与 α–β 预测对比",
  "Fitted from ping-pong between ranks 0 and 1": "由 rank 0 与 rank 1 之间的乒乓测试拟合",
  "parameter": "参数",
  "α (per message)": "α（每条消息）",
  "β (per byte)": "β（每字节）",
  "Before → after: {before} and {after} on each rank": "之前 → 之后：每个 rank 上的 {before} 和 {after}",
  "each value came from": "每个值的来源",
  // the lesson page, its form and its earlier runs (lesson-page.js, params-form.js, recent-runs.js, scrubber.js)
  "{n} rank at a gate": "{n} 个 rank 在等待放行",
  "{n} ranks at a gate": "{n} 个 rank 在等待放行",
  "the server answered {status}": "服务器返回 {status}",
  "could not reach the server: {error}": "无法连接服务器：{error}",
  "There is no run {run} on this server.": "这个服务器上没有运行 {run}。",
  "Run {run} is a run of another lesson ({lesson}).": "运行 {run} 属于另一门课（{lesson}）。",
  "{n} rank": "{n} 个 rank",
  "default": "默认",
  "invalid": "无效",
  "just now": "刚才",
  "{n} min ago": "{n} 分钟前",
  "{n} h ago": "{n} 小时前",
  "event {seq} of {total}": "第 {seq} 个事件，共 {total} 个",
  "room": "课堂",
  "Type the room code from the projector.": "输入投影上的房间码。",
  "run parameters": "运行参数",
  "Every rank stops before each collective and send/recv until you release it": "每个 rank 在每次集合通信和 send/recv 之前停下，直到你放行",
  // the hosted lab: a submission, its checks, the admin's tables (problem-page.js, lab.js)
  "Waiting for the judge — position {position} in the queue": "等待评测 — 队列第 {position} 位",
  "Passed — all {total} checks": "通过 — 全部 {total} 项校验",
  "Failed — {passed} of {total} checks passed": "未通过 — {total} 项校验中 {passed} 项通过",
  "judging": "评测中",
  "passed": "通过",
  "refused": "被拒绝",
  "{time} — {status}": "{time} — {status}",
  "PASS": "通过",
  "FAIL": "未通过",
  "on rank {ranks}": "在 rank {ranks} 上失败",
  "on ranks {ranks}": "在 rank {ranks} 上失败",
  "max abs error {error}": "最大绝对误差 {error}",
  "at": "位置",
  "got": "实际",
  "performed": "实际执行",
  "nothing": "无",
  "{status} since {time}": "{time} 起{status}",
};

/** Labels built around a name the page already shows: [pattern, Chinese with $1… or a function]. */
const ZH_BUILT_PATTERNS = [
  [/^(.+): tools$/, (m, panel) => `${translate(panel, "zh") ?? panel}：工具`],
  [/^room code ([A-Z0-9]+)$/, "房间码 $1"],
];

const DICTS = { zh: [{ ...ZH, ...ZH_BUILT }, [...ZH_PATTERNS, ...ZH_BUILT_PATTERNS]] };

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

/** `t(one)` when `n` is 1, else `t(many)`; `{n}` is `n`: tPlural(3, "{n} rank", "{n} ranks"). */
export function tPlural(n, one, many, vars = {}) {
  return t(n === 1 ? one : many, { n, ...vars });
}

/** A sentence the server wrote (a run's error, a refusal, a 422's `msg`) in the current language:
 *  the first of `ZH_SERVER` that matches it, else the English as it came. */
export function tServer(message, lang = currentLang()) {
  const text = String(message ?? "");
  const patterns = lang === "zh" ? ZH_SERVER : [];
  const found = patterns.find(([pattern]) => pattern.test(text));
  return found ? text.replace(found[0], found[1]) : text;
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

/** `source` in the active language, keeping its surrounding spaces. Inside, a run of spaces and line
 *  breaks counts as one space, as HTML shows it (a template's sentence may wrap). */
function localise(source) {
  const trimmed = source.trim();
  if (!trimmed || active === "en" || /^[\d\s.,:·/%×#-]*$/.test(trimmed)) return source;
  const out = translate(trimmed.replace(/\s+/g, " "), active);
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
