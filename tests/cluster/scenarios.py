"""The cluster tests' client, run inside the namespace beside a two-node Ray cluster
(tests/cluster/in_namespace.py): it starts a paralab server with `--cluster`, runs each named scenario
against it over HTTP, and writes what it saw as JSON for tests/cluster/test_ray_cluster.py to judge.

    python3 tests/cluster/scenarios.py OUT.json tp_mlp three_d collectives too_big judge queue hang time_limit cancel step node_death
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import httpx

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from tests.cluster.in_namespace import WORKER_NODE_MANAGER_PORT  # noqa: E402

PORT = 8765
URL = f"http://127.0.0.1:{PORT}"
FINAL = ("done", "failed", "cancelled")
ADMIN_PASSWORD = "cluster-admin-1"
STEP_TIME_LIMIT_S = 25        # a step-mode run left waiting ends here (the time-limit scenario waits for it)
CLIENT = httpx.Client(timeout=30)      # signed in as the hosted lab's admin (submissions need an account)
RUNS_PER_USER = 10            # each user's runs in flight: the queue scenario's 20 runs are two students' 10 each
# the hosted lab, so that the judge runs too and its quotas hold
LAB = {"PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": ADMIN_PASSWORD, "PARALAB_MAX_RUNS_PER_USER": str(RUNS_PER_USER),
       "PARALAB_MAX_STEP_RUNS_PER_USER": "4", "PARALAB_STEP_TIME_LIMIT_S": str(STEP_TIME_LIMIT_S)}


def start_server(data_dir: str) -> subprocess.Popen:
    server = subprocess.Popen([sys.executable, "-m", "app", "--port", str(PORT), "--data-dir", data_dir,
                               "--cluster", os.environ["PARALAB_TEST_RAY_CLIENT"], "--log-level", "warning"],
                              env={**os.environ, **LAB})
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        try:
            if CLIENT.get(f"{URL}/healthz", timeout=2).status_code == 200:
                signed_in = CLIENT.post(f"{URL}/api/auth/login", json={"name": "admin", "password": ADMIN_PASSWORD})
                assert signed_in.status_code == 200, signed_in.text
                return server
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode}")
        time.sleep(0.2)
    raise RuntimeError("the server did not come up within 240 s")


def post(body: dict, client: httpx.Client = CLIENT) -> str:
    response = client.post(f"{URL}/api/runs", json=body, timeout=30)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def student(name: str) -> httpx.Client:
    """A student's account, made by the admin, and a client signed in as them."""
    password = f"{name}-password-1"
    made = CLIENT.post(f"{URL}/api/admin/users", json={"name": name, "password": password, "role": "student"})
    assert made.status_code in (200, 201), made.text
    client = httpx.Client(timeout=30)
    signed_in = client.post(f"{URL}/api/auth/login", json={"name": name, "password": password})
    assert signed_in.status_code == 200, signed_in.text
    return client


def run_state(run_id: str) -> dict:
    return CLIENT.get(f"{URL}/api/runs/{run_id}", timeout=60).json()


def wait_final(run_id: str, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = run_state(run_id)
        if state["status"] in FINAL:
            return state
        time.sleep(0.1)
    raise TimeoutError(f"run {run_id} did not end within {timeout} s")


def events(run_id: str) -> list[dict]:
    text = CLIENT.get(f"{URL}/api/runs/{run_id}/events", timeout=60).text
    return [json.loads(line) for line in text.splitlines()]


def summary(run_id: str, state: dict) -> dict:
    log = events(run_id)
    hosts = {e["host"]: e["ranks"] for e in log if e["kind"] == "host"}
    checks = [e for e in log if e["kind"] == "check"]
    return {"status": state["status"], "error": state.get("error"), "hosts": hosts,
            "checks": len(checks), "checks_passed": sum(bool(c["passed"]) for c in checks),
            "ranks_with_events": sorted({e["rank"] for e in log if e.get("rank") is not None}),
            "positions": sorted({e["position"] for e in log if e["kind"] == "run" and e.get("position")})}


def cluster_idle() -> dict:
    """Wait until every CPU of the cluster is free again (Ray's SPREAD is best effort: on a busy cluster
    it may put a run's ranks together)."""
    deadline = time.monotonic() + 30
    while (cluster := CLIENT.get(f"{URL}/healthz").json()["cluster"])["free_cpus"] < cluster["cpus"]:
        assert time.monotonic() < deadline, f"the cluster's CPUs were not freed: {cluster}"
        time.sleep(0.2)
    return cluster


def one_run(body: dict) -> dict:
    cluster_idle()
    started = time.monotonic()
    run_id = post(body)
    result = summary(run_id, wait_final(run_id))
    result["seconds"] = round(time.monotonic() - started, 2)
    return result


def scenario_tp_mlp() -> dict:
    return one_run({"lesson": "tp_mlp", "world_size": 4, "placement": "spread"})


def scenario_three_d() -> dict:
    return one_run({"lesson": "three_d", "world_size": 8, "placement": "spread",
                    "params": {"tp": 2, "pp": 2, "dp": 2}})


def scenario_collectives() -> dict:
    """The collectives lesson's sweep on ranks over two hosts: α and β per link class."""
    cluster_idle()
    run_id = post({"lesson": "collectives", "world_size": 4, "placement": "spread",
                   "params": {"op": "all_reduce", "sweep": True}})
    result = summary(run_id, wait_final(run_id, timeout=180))
    result["link_fits"] = [{key: e.get(key) for key in ("link", "ranks", "value", "beta")}
                           for e in events(run_id) if e["kind"] == "metric" and e["name"] == "link_fit"]
    result["page"] = what_the_page_shows(run_id)
    return result


def what_the_page_shows(run_id: str) -> dict:
    """The lesson page of the run, in Chromium: the cost panel's lines per link class, the Hosts panel's cards."""
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.add_cookies([{"name": name, "value": value, "url": URL} for name, value in CLIENT.cookies.items()])
            page = context.new_page()
            page.goto(f"{URL}/lessons/collectives?run={run_id}")
            page.keyboard.press("End")
            links = page.locator("#cost-panel .cost-link")
            links.first.wait_for(timeout=60_000)
            hosts = page.locator("#hosts-panel li.host")
            hosts.first.scroll_into_view_if_needed(timeout=60_000)
            hosts.first.wait_for(timeout=60_000)
            lanes = page.locator("#lanes-panel li.lane[data-host]")
            lanes.first.wait_for(timeout=60_000)
            lane_hosts: dict[str, list[int]] = {}
            for lane in lanes.all():
                lane_hosts.setdefault(lane.get_attribute("data-host"), []).append(int(lane.get_attribute("data-rank")))
            return {"links": links.all_inner_texts(), "lanes": lane_hosts,
                    "headed": [lane.get_attribute("data-host") for lane in page.locator("#lanes-panel li.lane.new-host").all()],
                    "hosts": {card.get_attribute("data-host"): [int(r.get_attribute("data-rank"))
                                                                for r in card.locator("li.host-rank").all()]
                              for card in hosts.all()}}
        finally:
            browser.close()


def scenario_too_big() -> dict:
    """More ranks than the whole cluster has CPUs: the run fails at once, and the queue goes on."""
    too_big = one_run({"lesson": "collectives", "world_size": 12})
    return {"too_big": too_big, "next_run": one_run({"lesson": "tp_mlp", "world_size": 2})}


def scenario_judge() -> dict:
    """The reference solution of a problem, submitted to the hosted lab: judged on a cluster node."""
    code = open(os.path.join(REPO, "workers", "problems", "ring_allreduce", "reference.py")).read()
    sid = CLIENT.post(f"{URL}/api/submissions", json={"problem": "ring_allreduce", "code": code}).json()["id"]
    deadline = time.monotonic() + 180
    while (submission := CLIENT.get(f"{URL}/api/submissions/{sid}").json())["status"] in ("queued", "judging"):
        assert time.monotonic() < deadline, "the submission was not judged within 180 s"
        time.sleep(0.2)
    return {key: submission.get(key) for key in ("status", "reason", "note")}


def scenario_queue() -> dict:
    """Two students send their quota of runs at once (20 in all, more than the cluster holds): the first's
    run past the quota is refused as without a cluster, the second's runs are queued all the same, and
    every run ends."""
    ada, bob = student("ada"), student("bob")
    started = time.monotonic()
    body = lambda i: {"lesson": "tp_mlp", "world_size": 4, "placement": "spread" if i % 2 else "pack"}
    ids = [post(body(i), ada) for i in range(RUNS_PER_USER)]
    past_quota = ada.post(f"{URL}/api/runs", json=body(0))
    ada_in_flight = sum(run_state(run_id)["status"] not in FINAL for run_id in ids)
    ids += [post(body(i), bob) for i in range(RUNS_PER_USER)]
    runs = [summary(run_id, wait_final(run_id, timeout=300)) for run_id in ids]
    return {"statuses": [r["status"] for r in runs], "errors": [r["error"] for r in runs if r["error"]],
            "largest_position": max((max(r["positions"], default=0) for r in runs), default=0),
            "past_quota": {"status": past_quota.status_code, "body": past_quota.text, "in_flight": ada_in_flight},
            "quota": RUNS_PER_USER,
            "seconds": round(time.monotonic() - started, 2)}


def launcher_processes() -> list[int]:
    """Every process forked from a warm launcher, and the launchers (they all carry its command line)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"workers.launcher" in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def worker_raylet() -> int:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if b"raylet" in cmdline.split(b"\0")[0] and f"--node_manager_port={WORKER_NODE_MANAGER_PORT}".encode() in cmdline:
            return int(pid)
    raise RuntimeError("the second node's raylet is not running")


def wait_at_gates(run_id: str, ranks: int) -> None:
    deadline = time.monotonic() + 60
    while len({e["rank"] for e in events(run_id) if e["kind"] == "gate" and e.get("phase") == "waiting"}) < ranks:
        assert time.monotonic() < deadline, "the ranks never reached their gates"
        time.sleep(0.1)


def scenario_cancel() -> dict:
    """A step-mode run spread over both nodes waits at its gates; it is cancelled."""
    cluster_idle()
    idle = len(launcher_processes())
    run_id = post({"lesson": "tp_mlp", "world_size": 4, "placement": "spread", "step": True})
    wait_at_gates(run_id, 4)
    during = len(launcher_processes())
    assert CLIENT.delete(f"{URL}/api/runs/{run_id}", timeout=60).status_code in (200, 202, 204)
    state = wait_final(run_id, timeout=30)
    deadline = time.monotonic() + 15
    while len(launcher_processes()) > idle and time.monotonic() < deadline:
        time.sleep(0.2)
    result = summary(run_id, state)
    result.update(idle=idle, during=during, left=len(launcher_processes()))
    return result


def scenario_step() -> dict:
    """A step-mode run spread over both nodes: one `step` releases the ranks of both nodes, which meet at
    their next gates; `continue` then runs it to the end."""
    from websockets.sync.client import connect

    cluster_idle()
    run_id = post({"lesson": "tp_mlp", "world_size": 4, "placement": "spread", "step": True})
    wait_at_gates(run_id, 4)
    waits = lambda: sum(e["kind"] == "gate" and e.get("phase") == "waiting" for e in events(run_id))  # noqa: E731
    cookie = "; ".join(f"{name}={value}" for name, value in CLIENT.cookies.items())
    with connect(f"ws://127.0.0.1:{PORT}/ws/runs/{run_id}", additional_headers={"Cookie": cookie, "Origin": URL},
                 open_timeout=10, max_queue=None) as ws:
        ws.send(json.dumps({"op": "step"}))
        deadline = time.monotonic() + 60
        while waits() < 8 and time.monotonic() < deadline:      # every rank at its second gate
            time.sleep(0.1)
        at_second_gates = waits()
        ws.send(json.dumps({"op": "continue"}))
        state = wait_final(run_id)
    result = summary(run_id, state)
    result["waits_after_one_step"] = at_second_gates
    return result


def stopped_and_cleaned(body: dict, gates: int | None = None, timeout: float = 90) -> dict:
    """Run `body` to its end (waiting for `gates` ranks at their gates first, if given), then until
    every process it forked on either node is gone again."""
    cluster_idle()
    idle = len(launcher_processes())
    started = time.monotonic()
    run_id = post(body)
    if gates:
        wait_at_gates(run_id, gates)
    state = wait_final(run_id, timeout=timeout)
    seconds = round(time.monotonic() - started, 2)
    deadline = time.monotonic() + 15
    while len(launcher_processes()) > idle and time.monotonic() < deadline:
        time.sleep(0.2)
    result = summary(run_id, state)
    result.update(idle=idle, left=len(launcher_processes()), seconds=seconds)
    return result


def scenario_hang() -> dict:
    """A skipped collective across hosts: reported hung after the lesson's timeout."""
    return stopped_and_cleaned({"lesson": "deadlock", "world_size": 4, "placement": "spread",
                                "params": {"bug": "skip_collective", "timeout_s": 3}})


def scenario_time_limit() -> dict:
    """A step-mode run nobody steps, across hosts: each node's supervisor stops its ranks at the limit."""
    result = stopped_and_cleaned({"lesson": "tp_mlp", "world_size": 4, "placement": "spread", "step": True},
                                 gates=4, timeout=STEP_TIME_LIMIT_S + 30)
    result["limit_s"] = STEP_TIME_LIMIT_S
    return result


def scenario_node_death() -> dict:
    """A step-mode run spread over both nodes waits at its gates; the second node is killed."""
    result = {"cluster": cluster_idle()}
    idle = len(launcher_processes())
    run_id = post({"lesson": "tp_mlp", "world_size": 4, "placement": "spread", "step": True})
    wait_at_gates(run_id, 4)
    during = len(launcher_processes())
    os.kill(worker_raylet(), signal.SIGKILL)
    killed_at = time.monotonic()
    state = wait_final(run_id, timeout=60)
    failed_after = round(time.monotonic() - killed_at, 2)
    deadline = time.monotonic() + 15
    while len(launcher_processes()) > idle - 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    after = summary(run_id, state)
    after.update(idle=idle, during=during, left=len(launcher_processes()), failed_after_s=failed_after, **result)
    # the cluster goes on with the node that is left
    after["next_run"] = one_run({"lesson": "tp_mlp", "world_size": 4, "placement": "pack"})
    return after


SCENARIOS = {"tp_mlp": scenario_tp_mlp, "three_d": scenario_three_d, "collectives": scenario_collectives,
             "too_big": scenario_too_big, "judge": scenario_judge, "queue": scenario_queue, "hang": scenario_hang, "time_limit": scenario_time_limit,
             "cancel": scenario_cancel, "step": scenario_step, "node_death": scenario_node_death}


def main(out: str, names: list[str]) -> int:
    results = {}
    with tempfile.TemporaryDirectory(prefix="paralab-cluster-") as data_dir:
        started = time.monotonic()
        server = start_server(data_dir)
        results["server_start_s"] = round(time.monotonic() - started, 2)
        try:
            for name in names:
                try:
                    results[name] = SCENARIOS[name]()
                except Exception:
                    results[name] = {"exception": traceback.format_exc()}
        finally:
            server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
