/**
 * The tables beside the pictures (tables.js, tables-parallel.js) are drawn by this one function. Given a
 * node cache (dom.js), a redraw keeps the table and every row that reads as before: a step changes
 * a row or two, and only those are rebuilt and laid out again.
 */

import { h, nodeCache, place } from "paralab/dom.js";

/** A table: a caption, column heads, rows of strings whose first cell heads the row; `rowAttrs(r)` per row. */
export function gridTable(caption, head, rows, { className = null, rowAttrs = () => ({}), cache = nodeCache() } = {}) {
  if (!rows.length) return null;
  const table = cache.get(JSON.stringify(["table", caption, head, className]), () => h("table", { class: ["state-table-grid", className] },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, head.map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {})));
  place(table.tBodies[0], rows.map((cells, r) => {
    const attrs = rowAttrs(r);
    return cache.get(JSON.stringify(["row", cells, attrs]), () => h("tr", attrs, cells.map((cell, i) =>
      i === 0 ? h("th", { scope: "row" }, cell) : h("td", {}, cell))));
  }));
  return table;
}
