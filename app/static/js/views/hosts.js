/**
 * Ranks on more than one host — a run on a Ray cluster (docs/cluster.md), a job started outside the server
 * (a torchrun job, docs/torchrun.md): its ranks grouped by the node (host) they ran on, each rank with
 * what it is doing at the cursor, and each node's clock — how far it was put from the server's, and how
 * far off that may be (the skew estimate).
 * Drawn from the latest `host` event of each node (ctx.contents.hosts).
 */

import { h, morph } from "paralab/dom.js";
import { t } from "paralab/i18n.js";
import { rankColour } from "paralab/palette.js";
import { activity } from "paralab/replay.js";

const ms = (seconds) => `${(seconds * 1000).toFixed(seconds < 0.01 ? 2 : 1)} ms`;

function hostCard(host, state) {
  const offset = host.offset_s >= 0 ? `+${ms(host.offset_s)}` : `−${ms(-host.offset_s)}`;
  return h("li", { class: "host", "data-node": host.node, "data-host": host.host },
    h("h3", {}, t("node {node} · {host}", { node: host.node, host: host.host })),
    h("p", { class: "host-clock", title: t("this host's clock, put on the server's when the host joined") },
      t("clock {offset} from the server's, skew ± {skew}", { offset, skew: ms(host.skew_s) })),
    h("ol", { class: "host-ranks" }, host.ranks.map((rank) => {
      const rs = state.ranks[rank];
      const act = rs ? activity(rs, state) : { kind: "idle", text: "" };
      return h("li", { class: ["host-rank", `doing-${act.kind}`], "data-rank": rank, style: { "--rank": rankColour(rank) } },
        h("span", { class: "rank-chip" }, `rank ${rank}`), h("span", { class: "lane-text" }, act.text));
    })));
}

export function renderHosts(container, state, ctx) {
  const hosts = [...(ctx.contents.hosts?.values() || [])].sort((a, b) => a.node - b.node);
  if (!hosts.length) return false;
  const skew = Math.max(...hosts.map((host) => host.skew_s));
  const ranks = hosts.reduce((n, host) => n + host.ranks.length, 0);
  const summary = hosts.length > 1 ? "{ranks} ranks on {nodes} nodes; times aligned to within ± {skew}"
    : ranks > 1 ? "{ranks} ranks on 1 node; times aligned to within ± {skew}" : "1 rank on 1 node; times aligned to within ± {skew}";
  morph(container,
    h("p", { class: "hosts-summary" }, t(summary, { ranks, nodes: hosts.length, skew: ms(skew) })),
    h("ol", { class: "hosts" }, hosts.map((host) => hostCard(host, state))));
  return true;
}
