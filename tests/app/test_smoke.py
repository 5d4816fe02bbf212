def test_tp_mlp_runs_and_checks_pass(server):
    run = server.run("tp_mlp", 2)
    assert run["status"] == "done", run["error"]
    assert run["checks"] and all(c["passed"] for c in run["checks"])
