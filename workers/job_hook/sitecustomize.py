"""Put first on PYTHONPATH by `paralab trace` (docs/torchrun.md): Python runs this as each process of
the job starts. In a rank (RANK is set) with PARALAB_SERVER set, it traces the rank into that server
(workers/traced_job.py); in any other process (torchrun's agent itself) it does nothing. Then it runs
the sitecustomize it hides, if the environment had one.

This directory holds only this file, so that nothing of paralab's shadows the user's modules on the
path; paralab's root goes at the end of sys.path. (Its `workers` package is imported all the same:
a script's own top-level `workers` would get it; docs/torchrun.md, Limits.)
"""

import os
import sys


def _trace_this_rank() -> None:
    if not os.environ.get("PARALAB_SERVER") or "RANK" not in os.environ:
        return
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if root not in sys.path:
        sys.path.append(root)
    try:
        from workers.traced_job import trace_this_rank
    except ImportError as exc:   # tracing must never stop the job
        sys.stderr.write(f"paralab: rank {os.environ.get('RANK')} is not traced: {exc}\n")   # one write: ranks share stderr
        sys.stderr.flush()
        return
    trace_this_rank()


def _run_hidden_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_trace_this_rank()
_run_hidden_sitecustomize()
