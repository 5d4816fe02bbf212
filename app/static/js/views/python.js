/** A very small Python highlighter: comments, strings (also across lines), keywords, numbers. Escapes everything. */

import { escapeHtml } from "paralab/markdown.js";

const KEYWORDS = new Set(("False None True and as assert async await break class continue def del elif else except " +
  "finally for from global if import in is lambda nonlocal not or pass raise return try while with yield").split(" "));
const TOKEN = /(#.*$)|("""|''')|("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')|\b(\d+(?:\.\d+)?)\b|\b([A-Za-z_]\w*)\b/g;

/** Source text → one HTML string per line. */
export function highlightPython(text) {
  let inString = null;   // the open triple quote, if a docstring spans lines
  return text.replace(/\n$/, "").split("\n").map((line) => {
    let out = "";
    let rest = line;
    if (inString) {
      const end = rest.indexOf(inString);
      if (end < 0) return `<span class="py-str">${escapeHtml(rest)}</span>`;
      out += `<span class="py-str">${escapeHtml(rest.slice(0, end + 3))}</span>`;
      rest = rest.slice(end + 3);
      inString = null;
    }
    let last = 0;
    let m;
    TOKEN.lastIndex = 0;
    while ((m = TOKEN.exec(rest))) {
      out += escapeHtml(rest.slice(last, m.index));
      if (m[1]) out += `<span class="py-com">${escapeHtml(m[1])}</span>`;
      else if (m[2]) {
        const end = rest.indexOf(m[2], m.index + 3);
        if (end < 0) {
          out += `<span class="py-str">${escapeHtml(rest.slice(m.index))}</span>`;
          inString = m[2];
          last = rest.length;
          break;
        }
        out += `<span class="py-str">${escapeHtml(rest.slice(m.index, end + 3))}</span>`;
        TOKEN.lastIndex = end + 3;
        last = end + 3;
        continue;
      } else if (m[3]) out += `<span class="py-str">${escapeHtml(m[3])}</span>`;
      else if (m[4]) out += `<span class="py-num">${m[4]}</span>`;
      else if (KEYWORDS.has(m[5])) out += `<span class="py-kw">${m[5]}</span>`;
      else if (/^(def|class)$/.test(rest.slice(0, m.index).trim().split(/\s+/).pop() || "")) out += `<span class="py-def">${m[5]}</span>`;
      else out += m[5];
      last = TOKEN.lastIndex;
    }
    return out + escapeHtml(rest.slice(last));
  });
}
