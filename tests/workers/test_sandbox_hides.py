"""What the sandbox hides from learner code: the problems' reference solutions, also where an installed
paralab's copy lies inside a folder the sandbox binds (a wheel's, in site-packages)."""

from __future__ import annotations

import sys

from workers import sandbox


def test_an_installed_copy_of_the_reference_solutions_is_hidden_where_the_sandbox_binds_it(tmp_path, monkeypatch):
    site = tmp_path / "lib" / "site-packages"
    references = [site / "workers/problems/ring/reference.py", site / "workers/problems/ring/__pycache__/reference.cpython-311.pyc"]
    for path in [*references, site / "workers/problems/ring/starter.py"]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    unbound = tmp_path / "elsewhere"                      # on the path, but not a folder the sandbox binds
    (unbound / "workers/problems/ring").mkdir(parents=True)
    (unbound / "workers/problems/ring/reference.py").write_text("")
    monkeypatch.setattr(sys, "path", [*sys.path, str(site), str(unbound)])

    command = sandbox.bwrap_command(["true"], tmp_path)

    hidden = {command[i + 2]: i for i in range(len(command) - 2) if command[i:i + 2] == ["--ro-bind", "/dev/null"]}
    assert sorted(str(p) for p in references) == sorted(h for h in hidden if h.startswith(str(tmp_path)))
    site_bound = next(i for i in range(len(command)) if command[i:i + 3] == ["--ro-bind", str(site), str(site)])
    assert all(hidden[str(p)] > site_bound for p in references)   # after the folder's bind, or it would not hide them
    assert any(h.startswith("/paralab/workers/problems/") for h in hidden)   # the checkout's copy, as always
