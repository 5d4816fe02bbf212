/**
 * What each rank printed: the tail the server kept of its stdout and stderr (bounded per rank), under
 * a chip in the rank's colour, with how much was printed in all and how much of it was not kept.
 * Text only (never HTML): a program's output is shown as it is.
 */

import { changed, drawn, h, morph, showNote } from "paralab/dom.js";
import { rankColour } from "paralab/palette.js";
import { t } from "paralab/i18n.js";

export function renderOutput(container, state) {
  const printed = state.ranks.filter((rs) => rs.output);
  // Before the ranks' output, a note in front of the last drawing (kept, laid out: End after Home shows it again
  // without laying out every rank's text); the same output is not drawn again.
  if (!printed.length) {
    if (changed(container, "none")) showNote(container, h("p", { class: "empty" }, "Nothing printed yet at this step."));
    return true;
  }
  if (!changed(container, printed.map(({ rank, output }) => `${rank}:${output.seq}:${output.output.length}`).join(","))) return true;
  drawn(container);
  morph(container, h("div", { class: "rank-outputs" }, printed.map(({ rank, output }) =>
    h("figure", { class: "rank-output", "data-rank": rank },
      h("figcaption", {},
        h("span", { class: "rank-chip", style: { "--rank": rankColour(rank) } }, `rank ${rank}`),
        " ", t("{bytes} bytes printed", { bytes: output.output_bytes ?? output.output.length }),
        output.dropped_bytes ? ` ${t("(the first {dropped} not kept)", { dropped: output.dropped_bytes })}` : ""),
      h("pre", { class: "rank-output-text", tabindex: "0" }, output.output)))));
  return true;
}
