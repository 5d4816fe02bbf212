/**
 * A torchrun job's page (GET /jobs/{run_id}): the lesson page with the job's run opened live — no
 * parameters and no Run button (the job was started by torchrun), the hosts panel grouping its ranks.
 */

import { host, openRun, useLesson } from "paralab/lesson-page.js";

const run = JSON.parse(document.getElementById("paralab-job").textContent);
const title = document.querySelector(".lesson-title").textContent;
const summary = document.querySelector(".lesson-summary").textContent;

const EXPLANATION = `A job started by \`torchrun\` (\`paralab trace -- torchrun …\`), not by this server: each rank
traced its own \`torch.distributed\` calls and sent them here as it ran.

**Hosts** groups the ranks by the node they ran on. Each host has one clock, put on the server's
when its first rank joined (right after torchrun's rendezvous); its *skew* is how far off that may be
(half the best round trip). Two ranks on different hosts are compared to within the sum of their skews.

The job ends **done** when every rank has said goodbye, **failed** when a rank raised or was stopped.
Events a rank could not deliver (the server was down) are counted in its output and, when it could
say so, in this log.`;

host.fetchLesson = async () => ({
  id: "torchrun", title, summary, params: { type: "object", properties: {} }, world_sizes: [run.world_size],
  sources: [], explanation: EXPLANATION,
});
host.start = () => {};

async function main() {
  await useLesson("torchrun", { values: { world_size: run.world_size, params: {} } });
  document.querySelector("#run-form").hidden = true;
  openRun(run);
}

main();
