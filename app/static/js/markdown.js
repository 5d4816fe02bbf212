/**
 * A tiny, safe Markdown renderer for the lessons' explanations: headings, paragraphs, lists, tables,
 * inline code, bold/italic, links, fenced code blocks, and `<details><summary>` blocks for
 * self-check answers. Every character of the source is HTML-escaped; the only markup that passes
 * through is `<details>`, `<summary>…</summary>` and `</details>`, without attributes.
 */

export function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function safeHref(url) {
  return /^(https?:\/\/|\/|#)/i.test(url) ? url : null;
}

/** Inline markup on one escaped-as-we-go piece of text. */
export function inline(text) {
  const parts = text.split(/(`[^`]+`)/g);
  return parts.map((part) => {
    if (part.length > 1 && part.startsWith("`") && part.endsWith("`")) return `<code>${escapeHtml(part.slice(1, -1))}</code>`;
    let html = escapeHtml(part);
    html = html.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (all, label, url) => {
      const href = safeHref(url.replace(/&amp;/g, "&"));
      return href ? `<a href="${escapeHtml(href)}" rel="noopener">${label}</a>` : all;
    });
    html = html.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>");
    html = html.replace(/(^|[^*\w])\*([^*\s][^*]*?)\*(?!\w)/g, "$1<em>$2</em>");
    html = html.replace(/(^|[^\w])_([^_\s][^_]*?)_(?!\w)/g, "$1<em>$2</em>");
    return html;
  }).join("");
}

const DETAILS_LINE = /^\s*(<details>|<\/details>|<summary>.*?<\/summary>|\s)+\s*$/;

function detailsTags(line) {
  return line.replace(/<details>|<\/details>|<summary>(.*?)<\/summary>|\s+/g, (tag, summary) => {
    if (tag === "<details>") return "<details>";
    if (tag === "</details>") return "</details>";
    if (summary !== undefined) return `<summary>${inline(summary)}</summary>`;
    return "";
  });
}

function splitRow(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((cell) => cell.trim());
}

/** Markdown text → an HTML string that is safe to assign to innerHTML. */
export function renderMarkdown(source) {
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  let paragraph = [];
  const flush = () => {
    if (paragraph.length) out.push(`<p>${inline(paragraph.join(" "))}</p>`);
    paragraph = [];
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (/^\s*$/.test(line)) {
      flush();
      i += 1;
    } else if (/<(\/?details|summary)>/.test(line) && DETAILS_LINE.test(line)) {
      flush();
      out.push(detailsTags(line));
      i += 1;
    } else if ((m = line.match(/^```\s*([\w-]*)\s*$/))) {
      flush();
      const code = [];
      i += 1;
      while (i < lines.length && !/^```\s*$/.test(lines[i])) code.push(lines[i++]);
      i += 1;
      const lang = m[1] ? ` class="language-${escapeHtml(m[1])}"` : "";
      out.push(`<pre><code${lang}>${escapeHtml(code.join("\n"))}</code></pre>`);
    } else if ((m = line.match(/^(#{1,6})\s+(.*?)\s*#*\s*$/))) {
      flush();
      const level = Math.min(6, m[1].length + 1);   // the page's own title is the h1
      out.push(`<h${level}>${inline(m[2])}</h${level}>`);
      i += 1;
    } else if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1])) {
      flush();
      const head = splitRow(line);
      i += 2;
      const rows = [];
      while (i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i])) rows.push(splitRow(lines[i++]));
      out.push('<table tabindex="0"><thead><tr>' + head.map((c) => (c ? `<th>${inline(c)}</th>` : "<td></td>")).join("") + "</tr></thead><tbody>" +
        rows.map((r) => "<tr>" + r.map((c) => `<td>${inline(c)}</td>`).join("") + "</tr>").join("") + "</tbody></table>");
    } else if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
      flush();
      const ordered = /^\s*\d/.test(line);
      const items = [];
      while (i < lines.length && !/^\s*$/.test(lines[i])) {
        const item = lines[i].match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
        if (item) items.push(item[2]);
        else if (items.length) items[items.length - 1] += " " + lines[i].trim();   // a continuation line
        i += 1;
      }
      const tag = ordered ? "ol" : "ul";
      out.push(`<${tag}>${items.map((t) => `<li>${inline(t)}</li>`).join("")}</${tag}>`);
    } else if ((m = line.match(/^>\s?(.*)$/))) {
      flush();
      const quote = [];
      while (i < lines.length && (m = lines[i].match(/^>\s?(.*)$/))) {
        quote.push(m[1]);
        i += 1;
      }
      out.push(`<blockquote>${renderMarkdown(quote.join("\n"))}</blockquote>`);
    } else if (/^\s*(-{3,}|\*{3,})\s*$/.test(line)) {
      flush();
      out.push("<hr>");
      i += 1;
    } else {
      paragraph.push(line.trim());
      i += 1;
    }
  }
  flush();
  return balanceDetails(out).join("\n");
}

/** Close any `<details>` the text left open, and drop stray closers, so the page's structure holds. */
function balanceDetails(blocks) {
  let depth = 0;
  const out = blocks.map((block) => {
    if (!block.includes("details>")) return block;
    return block.replace(/<\/?details>/g, (tag) => {
      if (tag === "<details>") {
        depth += 1;
        return tag;
      }
      if (depth === 0) return "";
      depth -= 1;
      return tag;
    });
  });
  while (depth-- > 0) out.push("</details>");
  return out;
}
