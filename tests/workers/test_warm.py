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


def test_the_launcher_loads_a_lessons_program_at_its_first_run_only():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "started": [], "tp_mlp": [],
        "dtensor": ["torch.distributed.fsdp", "torch.distributed.tensor"],   # DTensor's package imports FSDP
        "pp": ["torch.distributed.fsdp", "torch.distributed.pipelining", "torch.distributed.tensor"]}
