/**
 * A hang report, in the manner of PyTorch's flight recorder: the sentence saying who waits where, the
 * mismatch class, the ranks that never arrived (highlighted), and a table rank × group with each
 * rank's last collective begun and last completed (sequence number, op, shape). A cell where a rank
 * began a call it never completed is marked: that is where it is stuck.
 */

import { h } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { currentLang, t, tMessage } from "paralab/i18n.js";
import { parseSite } from "paralab/replay.js";

const CLASSES = {
  "missing ranks": "Some members of the group never called this collective, so the others wait for them forever: a collective is a rendezvous.",
  "op mismatch": "The members called different collectives as the same call of the group: they can never pair up.",
  "size mismatch": "The members passed tensors of different shapes to the same collective.",
  "unmatched send/recv": "A send and a recv pair up only when they name each other and use the same tag; these do not.",
  unknown: "Every member entered the call and none came out.",
};

function call(c, stuck = false) {
  if (!c) return null;
  const s = parseSite(c.site);
  const what = c.cseq !== undefined && c.cseq !== null ? `#${c.cseq} ${c.op}` : `${c.op} ${c.op === "send" ? "→" : "←"} rank ${c.peer}${c.tag !== undefined ? ` tag ${c.tag}` : ""}`;
  return [h("span", { class: "fr-line" }, h("span", { class: "fr-op" }, what), c.shape ? h("span", { class: "fr-shape" }, ` [${c.shape.join("×")}]`) : null,
    stuck ? h("span", { class: "stuck-tag" }, "waiting") : null),
  s ? h("span", { class: "fr-site" }, `${s.path.split("/").pop()}:${s.line}`) : null];
}

function stuckIn(state) {
  if (!state?.last_begun) return false;
  const b = state.last_begun;
  const c = state.last_completed;
  if (!c) return true;
  if (b.cseq !== undefined && b.cseq !== null) return b.cseq !== c.cseq;
  return b.op !== c.op || b.peer !== c.peer || b.tag !== c.tag || b.site !== c.site;
}

/** The server's sentence about who waits where: translated, or in English with a capital letter. */
function sentence(diagnosis) {
  const said = tMessage(diagnosis);
  return currentLang() === "en" ? said.charAt(0).toUpperCase() + said.slice(1) : said;
}

export function hangReport(e) {
  const ranks = Object.keys(e.ranks || {}).map(Number).sort((a, b) => a - b);
  const groups = [...new Set(ranks.flatMap((r) => Object.keys(e.ranks[r] || {})))]
    .sort((a, b) => (a === e.group ? -1 : b === e.group ? 1 : a === "p2p" ? 1 : b === "p2p" ? -1 : a.localeCompare(b)));
  const missing = e.missing || [];
  const p2p = e.group === "p2p";
  const chip = (r) => h("span", { class: "rank-chip", style: { "--rank": rankColour(r) } }, `rank ${r}`);
  const hung = e.code === "hang.hung";                  // {seconds, diagnosis}: the diagnosis apart, under the heading
  const diagnosis = hung ? e.params.diagnosis : { ...e, message: (e.message || "").replace(/^hung for [^:]+: /, "") };
  const waited = hung ? `${e.params.seconds} s` : (/^hung for ([^:]+):/.exec(e.message || "") || [])[1];
  return h("div", { class: "hang-report" },
    h("h2", {}, "The run hung", waited ? h("span", { class: "hang-after" }, ` ${t("— stopped after {waited} without progress", { waited })}`) : null),
    h("p", { class: "hang-sentence" }, sentence(diagnosis)),
    h("dl", { class: "hang-facts" },
      h("div", {}, h("dt", {}, "mismatch"), h("dd", {}, h("span", { class: "mismatch-badge" }, e.mismatch || "unknown"))),
      e.group ? h("div", {}, h("dt", {}, "stuck in"), h("dd", {}, p2p ? "send/recv" : t("group {group}, collective #{cseq}", e))) : null,
      h("div", {}, h("dt", {}, p2p ? "unpaired" : "missing"),
        h("dd", { class: "hang-missing" }, missing.length ? missing.map(chip) : h("span", { class: "none" }, "none: every member arrived")))),
    CLASSES[e.mismatch] ? h("p", { class: "hang-why" }, CLASSES[e.mismatch]) : null,
    h("p", { class: "fr-caption" }, h("strong", {}, "Flight recorder"), " — per rank and group, the last call begun and the last completed (#: the group's sequence number)"),
    h("div", { class: "fr-wrap" },
      h("table", { class: "fr-table" },
        h("thead", {},
          h("tr", {}, h("th", { rowspan: 2, scope: "col" }, "rank"),
            groups.map((g) => h("th", { colspan: 2, scope: "colgroup", class: ["fr-group", g === e.group && "stuck-group"] },
              g === "p2p" ? "send / recv" : t("group {group}", { group: g })))),
          h("tr", {}, groups.map(() => [h("th", { scope: "col" }, "last begun"), h("th", { scope: "col" }, "last completed")]))),
        h("tbody", {}, ranks.map((r) => h("tr", { class: ["fr-row", missing.includes(r) && "missing"], "data-rank": r },
          h("th", { scope: "row" }, chip(r), missing.includes(r) ? h("span", { class: "missing-tag" }, p2p ? "unpaired" : "missing") : null),
          groups.map((g) => {
            const st = (e.ranks[r] || {})[g];
            const stuck = stuckIn(st);
            return [
              h("td", { class: ["fr-cell", stuck && "stuck"], title: stuck ? t("rank {rank} began this call and never completed it", { rank: r }) : null },
                call(st?.last_begun, stuck) || h("span", { class: "none" }, "–")),
              h("td", { class: "fr-cell" }, call(st?.last_completed) || h("span", { class: "none" }, "–")),
            ];
          })))))));
}
