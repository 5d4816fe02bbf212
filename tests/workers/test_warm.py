"""What a warm process has loaded: the launcher loads a lesson's program at that lesson's first run, so
a server that runs only light lessons never imports torch's parallel APIs (they cost about as much as
torch itself); a spawn-mode standby, which runs one rank of a lesson it cannot know ahead, loads them all."""

import json
import subprocess
import sys

from tests.conftest import REPO

PROBE = """
import json, sys
from workers import warm
from workers.lessons import LESSONS

def parallel_apis():
    return sorted(name for name in ("torch.distributed.tensor", "torch.distributed.fsdp",
                                    "torch.distributed.pipelining") if name in sys.modules)

seen = {}
warm.warm_up()
seen["started"] = parallel_apis()
warm.load(LESSONS["tp_mlp"])
seen["tp_mlp"] = parallel_apis()
warm.load(LESSONS["dtensor"])
seen["dtensor"] = parallel_apis()
warm.load(LESSONS["pp"])
seen["pp"] = parallel_apis()
print(json.dumps(seen))
"""


def test_warm_up_loads_no_lesson_and_load_loads_just_the_ones_asked():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "started": [], "tp_mlp": [],
        "dtensor": ["torch.distributed.fsdp", "torch.distributed.tensor"],   # DTensor's package imports FSDP
        "pp": ["torch.distributed.fsdp", "torch.distributed.pipelining", "torch.distributed.tensor"]}


def _resident_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith("VmRSS")).split()[1]) // 1024


def test_a_servers_launcher_loads_dtensor_at_the_first_dtensor_run_and_only_then(server_factory):
    """On a real server: the launcher grows by DTensor's modules (~70 MiB) at the first dtensor run,
    before forking its ranks, and not at its start, a tp_mlp run, or a second dtensor run."""
    from tests.app.helpers import launcher_pid

    server = server_factory()
    launcher = launcher_pid(server)
    sizes = [_resident_mib(launcher)]
    for lesson in ("tp_mlp", "dtensor", "dtensor"):
        assert server.run(lesson, 2)["status"] == "done"
        sizes.append(_resident_mib(launcher))
    started, after_tp_mlp, after_dtensor, after_second = sizes
    assert abs(after_tp_mlp - started) < 10 and after_dtensor - after_tp_mlp > 30 and abs(after_second - after_dtensor) < 10, sizes
