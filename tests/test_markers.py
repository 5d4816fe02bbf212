"""The `slow` list in tests/conftest.py names tests that exist: a test renamed or moved would leave
its entry behind, and quietly come back into the fast loop."""

from __future__ import annotations

import ast

from tests.conftest import REPO, SLOW_TESTS


def test_every_test_listed_as_slow_exists():
    for entry in SLOW_TESTS:
        path, _, name = entry.partition("::")
        assert (REPO / path).is_file(), f"SLOW_TESTS names {path}, which is not there"
        if name:
            tree = ast.parse((REPO / path).read_text())
            defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
            assert name in defined, f"SLOW_TESTS names {entry}, which {path} does not define"
