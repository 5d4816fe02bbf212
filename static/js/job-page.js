/**
 * A torchrun job's page (GET /jobs/{run_id}): the lesson page with the job's run opened live — no
 * parameters and no Run button (the job was started by torchrun), the hosts panel grouping its ranks.
 */

import { host, openRun, useLesson } from "paralab/lesson-page.js";

const run = JSON.parse(document.getElementById("paralab-job").textContent);
const title = document.querySelector(".lesson-title").textContent;
const summary = document.querySelector(".lesson-summary").textContent;

host.fetchLesson = async () => ({
  id: "torchrun", title, summary, params: { type: "object", properties: {} }, world_sizes: [run.world_size],
  sources: [], explanation: "",
});
host.start = () => {};

async function main() {
  await useLesson("torchrun", { values: { world_size: run.world_size, params: {} } });
  document.querySelector("#run-form").hidden = true;
  openRun(run);
}

main();
