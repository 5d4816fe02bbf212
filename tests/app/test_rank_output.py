"""What a run's ranks print is captured with a cap (issue #10, point 4): a rank that floods its
stdout costs the server nothing; the run's log keeps the tail of what it printed and says how much
was dropped, and why."""

from __future__ import annotations

from pathlib import Path

from tests.app.helpers import events


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise LookupError("no VmRSS")


def test_a_rank_printing_64_mib_is_capped_to_its_tail_with_the_reason(server):
    before = _rss_mb(server.proc.pid)
    run = server.run("crash", 2, {"how": "flood", "rank": 1})
    assert run["status"] == "done", run["error"]
    assert _rss_mb(server.proc.pid) - before < 30               # 64 MiB went by; the server kept 8 KiB
    printed = [e for e in events(server, run["id"]) if e["kind"] == "log" and e.get("level") == "output"]
    assert [e["rank"] for e in printed] == [1]                  # rank 0 printed nothing
    flood = printed[0]
    assert flood["output_bytes"] == 64 * (1 << 20) + len("\nthe last words of the flood\n")
    assert flood["output"].endswith("the last words of the flood\n")
    assert len(flood["output"]) <= 8 * 1024
    assert flood["dropped_bytes"] == flood["output_bytes"] - len(flood["output"])
    assert "capped at 8192 bytes" in flood["message"]


def test_a_short_print_is_kept_whole(server):
    run = server.run("crash", 2, {"how": "print", "rank": 0})
    assert run["status"] == "done", run["error"]
    printed = [e for e in events(server, run["id"]) if e["kind"] == "log" and e.get("level") == "output"]
    assert [e["rank"] for e in printed] == [0]
    assert printed[0]["output"] == 'a lesson printing to stdout\n{"pid": 999999999}\n'
    assert printed[0]["dropped_bytes"] == 0 and "capped" not in printed[0]["message"]


def test_in_spawn_mode_a_ranks_flood_is_capped_the_same_way(spawn_server):
    """Spawn mode (macOS's start method): a standby's prints go to a pipe its slot reads."""
    spawn = spawn_server
    run = spawn.wait_run(spawn.start_run("crash", 2, {"how": "flood", "rank": 0})["id"], timeout=120)
    assert run["status"] == "done", run["error"]
    printed = [e for e in events(spawn, run["id"]) if e["kind"] == "log" and e.get("level") == "output"]
    flood = next(e for e in printed if e["rank"] == 0)
    assert flood["output_bytes"] >= 64 * (1 << 20)
    assert flood["output"].endswith("the last words of the flood\n") and len(flood["output"]) <= 8 * 1024
