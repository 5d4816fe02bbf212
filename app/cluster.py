"""Runs placed on a Ray cluster (`--cluster`, docs/cluster.md): Ray decides where a run's ranks go
(a placement group, one bundle per rank); paralab starts them there, warm.

- **One warm launcher per node.** At start, and whenever a node joins, the server puts a
  `workers/ray_node.py` actor on every live node (pinned to it, no CPU of its own); each holds that
  node's `python -m workers.launcher`, which has imported torch once and forks a run's ranks.
- **A run waits for its placement group** (`reserve`): its ranks' CPUs (a GPU each for NCCL), PACK
  (as few nodes as may be) or SPREAD (across nodes). The queue's head waits while the cluster is full.
- **Ranks in order on nodes** (`launch`): consecutive ranks go to the same node as far as the
  bundles allow, so three_d's tensor-parallel neighbours share a host and its pp/dp groups cross.
  Rank 0's node serves the run's TCPStore; each node's launcher forks its own ranks, each node's
  supervisor reports how they ended; events come over the event port as on one machine.
- **Each node's clock** is put on the server's: the offset is measured (best of a few round trips)
  when the node's launcher is ready, and each run's `t0` on that node is shifted by it.
- **A node that dies** fails the runs with ranks there, naming it (`ClusterRun.lost_node`); Ray
  takes its actor and launcher down with it, and the launcher's children die with the launcher.

Ray is imported only here, and only when a cluster is configured.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, field

from app.settings import REPO_ROOT
from workers.launch_request import LaunchRequest

log = logging.getLogger("paralab.cluster")

STRATEGIES = {"pack": "PACK", "spread": "SPREAD"}
NODE_POLL_S = 1.0           # how often the server looks for nodes that joined or died
RESERVE_POLL_S = 0.25       # how often a waiting run looks again whether its placement group is ready
CONNECT_ATTEMPTS = 3        # joining the cluster: a busy head may fail to start a client server in time


class ClusterError(RuntimeError):
    pass


def cluster_address(value: str) -> str:
    """The Ray address the server joins: `auto` reads RAY_ADDRESS; `ray://HOST:PORT` goes through Ray
    Client (`pip install paralab[ray]`); `HOST:PORT` joins the cluster from one of its nodes."""
    if value == "auto":
        address = os.environ.get("RAY_ADDRESS", "")
        if not address:
            raise ClusterError("--cluster auto reads RAY_ADDRESS, and RAY_ADDRESS is not set")
        return address
    return value


@dataclass
class Node:
    id: str
    name: str                   # what the page and the errors call it: its address (with its id if shared)
    ip: str
    actor: object
    offset_s: float = 0.0       # server clock − this node's clock
    skew_s: float = 0.0         # half the best round trip that measured it


@dataclass
class Placement:
    """A run's reservation: its placement group, and the node of each rank (in rank order)."""
    group: object
    nodes: list[str] = field(default_factory=list)


@dataclass
class ClusterRun:
    """A run's ranks on the cluster: on each node, its supervisor's pid (= process group)."""
    cluster: "RayCluster"
    supervisors: dict[str, int]             # node id → supervisor pid there
    ranks: dict[str, list[int]]             # node id → the ranks there

    def kill(self) -> None:
        """SIGKILL every node's part of the run (a node that is gone has nothing left to kill)."""
        for node_id, pid in self.supervisors.items():
            node = self.cluster.nodes.get(node_id)
            if node is not None and node_id not in self.cluster.dead:
                node.actor.kill.remote(pid)

    def lost_node(self) -> tuple[str, list[int]] | None:
        """(the name of a node of this run that died, the ranks it ran), or None."""
        for node_id in self.supervisors:
            if node_id in self.cluster.dead:
                return self.cluster.dead[node_id], self.ranks[node_id]
        return None


class RayCluster:
    def __init__(self, address: str):
        self.address = cluster_address(address)
        self.nodes: dict[str, Node] = {}
        self.dead: dict[str, str] = {}      # node id → name, for nodes that died
        self.events_host = "127.0.0.1"
        self.resources: dict = {}           # the cluster's CPUs/GPUs in all and free, as last looked at
        self._ray = None
        self._watcher: asyncio.Task | None = None

    # ---- joining the cluster --------------------------------------------------------------------
    async def start(self) -> None:
        await asyncio.to_thread(self._connect)
        await asyncio.to_thread(self._sync_nodes)
        self._watcher = asyncio.create_task(self._watch_nodes())

    def _connect(self) -> None:
        import ray

        self._ray = ray
        for attempt in range(1, CONNECT_ATTEMPTS + 1):
            if ray.is_initialized():
                break
            try:
                ray.init(address=self.address, namespace="paralab", logging_level=logging.WARNING,
                         log_to_driver=False, configure_logging=False)
            except ConnectionAbortedError as exc:   # a busy head failed to start this client's server in time
                if attempt == CONNECT_ATTEMPTS:
                    raise
                log.warning("joining the Ray cluster at %s failed (%s); trying again", self.address, exc)
                ray.shutdown()
                time.sleep(2.0 * attempt)
        self.events_host = ray.util.get_node_ip_address()

    def _sync_nodes(self) -> None:
        """A warm launcher on every live node that has none; nodes gone are marked dead."""
        ray = self._ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from workers.ray_node import NodeLauncher

        listed = ray.nodes()
        total, free = ray.cluster_resources(), ray.available_resources()
        self.resources = {f"{key.lower()}s": total[key] for key in ("CPU", "GPU") if key in total}
        self.resources.update({f"free_{key.lower()}s": free.get(key, 0) for key in ("CPU", "GPU") if key in total})
        addresses = [n["NodeManagerAddress"] for n in listed if n["Alive"]]
        starting = {}
        for entry in listed:
            node_id, ip = entry["NodeID"], entry["NodeManagerAddress"]
            if not entry["Alive"]:
                if node_id in self.nodes and node_id not in self.dead:
                    self.dead[node_id] = self.nodes[node_id].name
                    log.warning("cluster node %s died", self.nodes[node_id].name)
                continue
            if node_id in self.nodes:
                continue
            name = ip if addresses.count(ip) == 1 else f"{ip}/{node_id[:6]}"
            actor = ray.remote(NodeLauncher).options(
                num_cpus=0, max_concurrency=8, name=f"paralab-launcher-{node_id}", get_if_exists=True,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote(str(REPO_ROOT), ip)
            starting[node_id] = Node(node_id, name, ip, actor)
        for node_id, node in starting.items():
            ray.get(node.actor.ready.remote(), timeout=180)
            node.offset_s, node.skew_s = self._clock_offset(node)
            self.nodes[node_id] = node
            log.info("cluster node %s: warm launcher ready (clock offset %.6f s)", node.name, node.offset_s)

    def _clock_offset(self, node: Node, tries: int = 5) -> tuple[float, float]:
        best = None
        for _ in range(tries):
            sent = time.monotonic()
            theirs = self._ray.get(node.actor.clock.remote())
            back = time.monotonic()
            if best is None or back - sent < best[1] * 2:
                best = ((sent + back) / 2 - theirs, (back - sent) / 2)
        return best

    async def _watch_nodes(self) -> None:
        while True:
            await asyncio.sleep(NODE_POLL_S)
            try:
                await asyncio.to_thread(self._sync_nodes)
            except Exception:
                log.exception("could not list the cluster's nodes")

    @property
    def ready(self) -> bool:
        return any(node_id not in self.dead for node_id in self.nodes)

    def summary(self) -> dict:
        """For /healthz: the nodes with a warm launcher, and the cluster's resources, in all and free."""
        return {"nodes": sum(1 for node_id in self.nodes if node_id not in self.dead), **self.resources}

    # ---- a run -------------------------------------------------------------------------------------
    async def reserve(self, world_size: int, placement: str, backend: str, gave_up) -> Placement | None:
        """The run's placement group, once Ray has reserved it; None if `gave_up()` first (cancelled)."""
        from ray.util.placement_group import placement_group

        bundle = {"GPU": 1, "CPU": 1} if backend == "nccl" else {"CPU": 1}
        await asyncio.to_thread(self._check_it_fits, world_size, "GPU" if backend == "nccl" else "CPU")
        group = placement_group([dict(bundle) for _ in range(world_size)], strategy=STRATEGIES[placement])
        ready = group.ready()
        while True:
            done, _ = await asyncio.to_thread(self._ray.wait, [ready], timeout=RESERVE_POLL_S)
            if done:
                break
            if gave_up():
                self.release(Placement(group))
                return None
        table = await asyncio.to_thread(self._ray.util.placement_group_table, group)
        by_bundle = table["bundles_to_node_id"]
        return Placement(group, _ranks_in_order([by_bundle[i] for i in range(world_size)]))

    def _check_it_fits(self, world_size: int, resource: str) -> None:
        """A run the whole cluster could never hold fails now, rather than hold the queue's head forever."""
        total = self._ray.cluster_resources().get(resource, 0)
        if total < world_size:
            raise ClusterError(f"the cluster has {total:g} {resource}s in all, and this run needs {world_size}")

    def release(self, placement: Placement) -> None:
        self._ray.util.remove_placement_group(placement.group)

    async def launch(self, request: LaunchRequest, placement: Placement) -> ClusterRun:
        """Each node's launcher forks its ranks; rank 0's node serves the store."""
        return await asyncio.to_thread(self._launch, request, placement)

    def _launch(self, request: LaunchRequest, placement: Placement) -> ClusterRun:
        ranks: dict[str, list[int]] = {}
        for rank, node_id in enumerate(placement.nodes):
            ranks.setdefault(node_id, []).append(rank)
        missing = [node_id for node_id in ranks if node_id not in self.nodes or node_id in self.dead]
        if missing:
            raise ClusterError(f"no warm launcher on node {missing[0]} (it is starting, or it died)")
        home = self.nodes[placement.nodes[0]]
        store = f"{home.ip}:{self._ray.get(home.actor.free_port.remote())}"
        asked = {node_id: self.nodes[node_id].actor.launch.remote(
                     {**request.to_json(), "ranks": node_ranks, "store": store, "node": self.nodes[node_id].name,
                      "t0": request.t0 - self.nodes[node_id].offset_s})
                 for node_id, node_ranks in ranks.items()}
        supervisors = {}
        try:
            for node_id, reply in asked.items():
                supervisors[node_id] = self._ray.get(reply, timeout=60)
        except Exception:
            ClusterRun(self, supervisors, ranks).kill()
            raise
        return ClusterRun(self, supervisors, ranks)

    def host_events(self, run: ClusterRun) -> list[dict]:
        """Each node of the run as a `host` event's fields: where its ranks ran, its clock's offset."""
        return [{"node": index, "host": self.nodes[node_id].name, "ranks": run.ranks[node_id],
                 "offset_s": self.nodes[node_id].offset_s, "skew_s": self.nodes[node_id].skew_s}
                for index, node_id in enumerate(run.ranks)]

    async def judge(self, problem: str, code: str, allow_unsandboxed: bool, world_size: int, stop) -> dict:
        """Judge a submission on a node Ray picks (the problem's ranks' CPUs free there), in that node's
        sandbox; `stop` (a threading.Event) set: the task is killed, with its sandbox. The verdict's
        fields, and `node`: where it was judged."""
        from workers.ray_node import judge_on_node

        task = self._ray.remote(judge_on_node).options(num_cpus=world_size, max_retries=0)
        ref = task.remote(problem, code, allow_unsandboxed)
        while True:
            done, _ = await asyncio.to_thread(self._ray.wait, [ref], timeout=RESERVE_POLL_S)
            if done:
                verdict = await asyncio.to_thread(self._ray.get, ref)
                break
            if stop.is_set():
                self._ray.cancel(ref, force=True)
                return {"status": "refused", "checks": [], "reason": "stopped: cancelled", "note": None}
        node = self.nodes.get(verdict.pop("node_id", None))
        return {**verdict, "node": node.name if node else None}

    async def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
        if self._ray is not None:
            await asyncio.to_thread(self._ray.shutdown)


def _ranks_in_order(bundle_nodes: list[str]) -> list[str]:
    """The node of each rank: the bundles' nodes grouped, in the order each node first appears, so
    consecutive ranks share a node (tensor-parallel neighbours on one host)."""
    order = list(dict.fromkeys(bundle_nodes))
    return sorted(bundle_nodes, key=order.index)
