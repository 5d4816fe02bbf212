"""A user's own program on real ranks (issue #13, points 2 and 5): run unchanged with torchrun's
environment, traced with the lines of the user's file; when it raises, hangs, mismatches its
collectives or exits with a status, the same report as a lesson's, naming the user's file; each
rank's printed output kept per rank, bounded."""

from __future__ import annotations

import textwrap

import pytest

from tests import web
from tests.app.helpers import events


def run_script(server, source: str, world_size: int = 2, filename: str = "mine.py", args=(), **extra) -> tuple[dict, list[dict]]:
    response = web.post(f"{server.url}/api/runs", json={
        "lesson": "script", "world_size": world_size,
        "params": {"source": textwrap.dedent(source), "filename": filename, "args": list(args)}, **extra})
    assert response.status_code == 201, response.text
    run = server.wait_run(response.json()["id"])
    return run, events(server, run["id"])


def printed(log: list[dict]) -> dict[int, str]:
    return {e["rank"]: e["output"] for e in log if e["kind"] == "log" and e["level"] == "output"}


def calls(log: list[dict]) -> list[dict]:
    return [e for e in log if e["kind"] in ("collective", "p2p") and e["phase"] == "begin"]


def test_a_script_gets_torchruns_environment_and_its_arguments_without_calling_init(server):
    run, log = run_script(server, """
        import os, sys
        names = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR"]
        print(" ".join(f"{n}={os.environ[n]}" for n in names), int(os.environ["MASTER_PORT"]) > 0, sys.argv)
    """, world_size=3, args=["--lr", "0.1"])
    assert run["status"] == "done", run["error"]
    assert printed(log) == {r: f"RANK={r} WORLD_SIZE=3 LOCAL_RANK={r} LOCAL_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 True "
                               f"['mine.py', '--lr', '0.1']\n" for r in range(3)}
    assert calls(log) == []


def test_init_process_group_with_no_argument_joins_the_runs_ranks_and_each_call_names_its_line(server):
    run, log = run_script(server, """
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo")
        x = torch.ones(3) * (dist.get_rank() + 1)
        dist.all_reduce(x)
        print(x.tolist())
        if __name__ == "__main__":
            dist.broadcast(x, src=0)
    """, world_size=3, filename="train.py")
    assert run["status"] == "done", run["error"]
    assert printed(log) == {r: "[6.0, 6.0, 6.0]\n" for r in range(3)}
    made = calls(log)
    assert [(e["op"], e["site"]) for e in made if e["rank"] == 0] == [("all_reduce", "train.py:7"), ("broadcast", "train.py:10")]
    assert sorted(e["rank"] for e in made) == [0, 0, 1, 1, 2, 2]
    assert made[0]["group"] == "world" and made[0]["ranks"] == [0, 1, 2]


def test_a_script_that_raises_is_reported_with_the_rank_and_the_line_of_its_file(server):
    run, log = run_script(server, """
        import torch.distributed as dist
        dist.init_process_group("gloo")

        def step(rank):
            if rank == 1:
                raise ValueError("loss is NaN")

        step(dist.get_rank())
        dist.barrier()
    """, filename="homework.py")
    assert run["status"] == "failed"
    error = run["error"]
    assert (error["kind"], error["rank"], error["site"]) == ("crash", 1, "homework.py:7")
    assert error["message"] == "rank 1 raised ValueError: loss is NaN"
    assert 'File "homework.py", line 7, in step\n    raise ValueError("loss is NaN")' in error["traceback"]
    assert error["traceback"].startswith('Traceback (most recent call last):\n  File "homework.py", line 9, in <module>')


def test_a_script_that_skips_a_collective_gets_the_hang_report_with_its_lines(server):
    run, log = run_script(server, """
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        x = torch.ones(2)
        dist.all_reduce(x)
        if dist.get_rank() != 2:
            dist.all_reduce(x)
    """, world_size=3, hang_timeout_s=2)
    error = run["error"]
    assert run["status"] == "failed" and error["kind"] == "hang", error
    assert (error["mismatch"], error["missing"], error["cseq"]) == ("missing ranks", [2], 2)
    assert "; rank 2 never entered it" in error["message"]
    stuck = [e for e in calls(log) if e["rank"] == 0]
    assert [e["site"] for e in stuck] == ["mine.py:6", "mine.py:8"]


def test_mismatched_collectives_are_named(server):
    run, _ = run_script(server, """
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        x = torch.ones(4)
        if dist.get_rank() == 0:
            dist.all_reduce(x)
        else:
            dist.all_gather([torch.empty(4) for _ in range(dist.get_world_size())], x)
    """, world_size=3, hang_timeout_s=2)
    error = run["error"]
    assert run["status"] == "failed" and error["mismatch"] == "op mismatch", error
    assert "rank 0: all_reduce, rank 1: all_gather" in error["message"]


def test_sys_exit_is_the_scripts_status(server):
    clean, _ = run_script(server, "import sys\nsys.exit(0)\n")
    assert clean["status"] == "done", clean["error"]
    run, _ = run_script(server, "import os, sys\nsys.exit(3 if os.environ['RANK'] == '1' else 0)\n")
    assert run["status"] == "failed"
    assert (run["error"]["rank"], run["error"]["message"]) == (1, "rank 1 raised SystemExit: the script exited with status 3")


def test_each_ranks_output_is_kept_per_rank_and_bounded(server):
    run, log = run_script(server, """
        import os
        for i in range(20000):
            print(f"rank {os.environ['RANK']} line {i}")
    """)
    assert run["status"] == "done", run["error"]
    outputs = {e["rank"]: e for e in log if e["kind"] == "log" and e["level"] == "output"}
    for rank in (0, 1):
        assert outputs[rank]["output"].endswith(f"rank {rank} line 19999\n")
        assert len(outputs[rank]["output"].encode()) <= 12 * 1024 < outputs[rank]["output_bytes"]
        assert outputs[rank]["dropped_bytes"] > 0


@pytest.mark.parametrize("problem, params, loc", [
    ("a path", {"filename": "../etc/passwd.py"}, ["body", "params", "filename"]),
    ("too long", {"source": "#" * 40_001}, ["body", "params", "source"]),
    ("too many args", {"args": ["x"] * 33}, ["body", "params", "args"]),
])
def test_bad_script_requests_name_the_field(server, problem, params, loc):
    response = web.post(f"{server.url}/api/runs", json={"lesson": "script", "world_size": 2, "params": params})
    assert response.status_code == 422, problem
    assert response.json()["detail"][0]["loc"] == loc


def test_a_lecture_room_does_not_run_ones_own_program(server):
    """A room's presenter starts the course's lessons only: a script run is refused, nothing starts."""
    import asyncio

    from tests.app.helpers import run_count
    from tests.app.room_client import RoomClient, close_all, new_room

    async def scenario():
        room = await new_room(server)
        presenter = await RoomClient.open(server, room["code"], secret=room["secret"])
        try:
            before = run_count(server)
            await presenter.send(op="run", lesson="script", world_size=2, params={"source": "print(1)"})
            assert "a lecture room runs the course's lessons" in str(await presenter.error())
            assert run_count(server) == before
        finally:
            await close_all(presenter)

    asyncio.run(asyncio.wait_for(scenario(), 60))
