"""Forging a verdict, 4: hand in the reference solution itself, imported, or read and run from any
folder on Python's path (/paralab's copy; a paralab installed from a wheel has one in site-packages)
from inside the sandbox — the import screen cannot see `__import__`."""
importlib = __import__("importlib")
glob = __import__("glob")
sys = __import__("sys")

try:
    reference = importlib.import_module("workers.problems.fg_operators.reference")
except Exception:
    reference = None
if not hasattr(reference, "CopyToTensorParallel"):   # hidden: an empty file where it was
    scope = {}
    for root in ["/paralab", *sys.path]:
        for path in glob.glob(f"{root}/workers/problems/fg_operators/**/reference*", recursive=True):
            try:
                exec(open(path).read(), scope)
            except Exception:
                pass
    reference = type("found", (), scope)


class CopyToTensorParallel(reference.CopyToTensorParallel):
    pass


class ReduceFromTensorParallel(reference.ReduceFromTensorParallel):
    pass
