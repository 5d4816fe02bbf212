"""How the run manager ends a run from the supervisor's report and the ranks' last events, fed the
protocol's messages directly (no ranks): which rank a crash names."""

from __future__ import annotations

import asyncio

from app import run_outcome
from app.hub import Hub
from app.runs import RunManager
from app.settings import Settings
from workers.protocol import Collective


def all_reduce(phase: str, t: float, **fields) -> dict:
    """A well-formed all-reduce event (the server checks each at ingest), without its rank (the
    event port sets it)."""
    event = Collective(phase=phase, rank=0, t=t, op="all_reduce", group="world", ranks=[0, 1], cseq=1, shape=[4],
                       dtype="float32", bytes=16, wire_bytes=16, site="p.py:22", **fields).to_dict()
    del event["rank"]
    return event


def running(tmp_path, world_size: int, channels_open: int = 0):
    """A run manager, and a run of the crash lesson it holds as running (no ranks: messages are fed to it)."""
    manager = RunManager(Settings(DATA_DIR=tmp_path), Hub())
    manager.runs_dir.mkdir(parents=True)
    run = manager.create("crash", world_size, {}, False, "gloo")
    run.status, run.channels_open = "running", channels_open
    return manager, run


def conclude(tmp_path, world_size: int, messages: list[tuple[int | None, dict]]) -> dict:
    """Feed (rank, message) pairs as the event port would; returns the run's final public state."""
    async def scenario():
        manager, run = running(tmp_path, world_size)
        for rank, message in messages:
            manager.ingest.take(run, rank, message)
        await asyncio.wait_for(run.finished.wait(), 5)
        return {"status": run.status, "error": run.error, "last": run.events[-1]}

    return asyncio.run(scenario())


def report(*exits: tuple[int, int, bool], timed_out: bool = False) -> tuple[None, dict]:
    return None, {"supervisor": "exited", "timed_out": timed_out,
                  "exits": [{"rank": r, "code": c, "stopped": s} for r, c, s in exits]}


def cut_off(rank: int) -> list[tuple[int, dict]]:
    """What a rank sends when a peer's death breaks its all-reduce: the span's end with an error,
    then the error that ended the rank."""
    message = "RuntimeError: Connection closed by peer"
    return [(rank, all_reduce("begin", 0.1)),
            (rank, all_reduce("end", 0.2, error=message)),
            (rank, {"kind": "log", "level": "error", "t": 0.2, "message": message, "site": "p.py:22",
                    "traceback": "..."})]


def test_clean_exits_end_the_run_done(tmp_path):
    ended = conclude(tmp_path, 2, [report((0, 0, False), (1, 0, False))])
    assert ended["status"] == "done" and ended["error"] is None
    assert (ended["last"]["kind"], ended["last"]["status"]) == ("run", "done")


def test_a_raising_rank_is_named_with_its_message_site_and_traceback(tmp_path):
    ended = conclude(tmp_path, 2, [
        (1, {"kind": "log", "level": "error", "t": 0.1, "message": "ZeroDivisionError: boom", "site": "p.py:15",
             "traceback": "Traceback ..."}),
        report((0, -9, True), (1, 1, False))])
    assert ended["status"] == "failed"
    assert ended["error"] == {"kind": "crash", "rank": 1, "message": "rank 1 raised ZeroDivisionError: boom",
                              "code": "crash.raised", "params": {"exception": "ZeroDivisionError: boom", "rank": 1},
                              "site": "p.py:15", "traceback": "Traceback ..."}
    assert ended["last"]["error"] == ended["error"]


def test_the_rank_that_died_is_named_not_the_rank_it_cut_off(tmp_path):
    """Rank 2 exits; rank 1's all-reduce breaks and it fails too; both exits are failures."""
    ended = conclude(tmp_path, 3, [*cut_off(1), report((0, -9, True), (1, 1, False), (2, 3, False))])
    assert ended["error"]["rank"] == 2
    assert ended["error"]["message"] == "rank 2 exited with status 3"


def test_a_segfault_is_named_by_its_signal(tmp_path):
    ended = conclude(tmp_path, 2, [*cut_off(0), report((0, 1, False), (1, -11, False))])
    assert (ended["error"]["rank"], ended["error"]["message"]) == (1, "rank 1 was killed by SIGSEGV")


def test_when_every_failure_is_in_communication_the_lowest_rank_is_named(tmp_path):
    ended = conclude(tmp_path, 2, [*cut_off(1), *cut_off(0), report((0, 1, False), (1, 1, False))])
    assert ended["error"]["rank"] == 0
    assert ended["error"]["message"] == "rank 0 raised RuntimeError: Connection closed by peer"


def test_a_timed_out_report_is_a_timeout_naming_where_each_rank_was(tmp_path):
    ended = conclude(tmp_path, 2, [
        (0, all_reduce("begin", 0.1)),
        report((0, -9, True), (1, -9, True), timed_out=True)])
    assert ended["status"] == "failed"
    assert ended["error"]["kind"] == "timeout"
    assert ended["error"]["ranks"] == {"0": "p.py:22", "1": None}


def test_a_rank_still_being_read_after_the_report_is_waited_for_while_its_events_come(tmp_path, monkeypatch):
    """A loaded server may read a rank's last events long after its supervisor reported: while they
    keep coming the run waits for them (here five times the quiet allowed), so the error is the rank's own."""
    monkeypatch.setattr(run_outcome, "CHANNEL_DRAIN_S", 0.2)

    async def scenario():
        manager, run = running(tmp_path, 2, channels_open=1)
        manager.ingest.take(run, *report((0, 0, False), (1, 1, False)))
        for step in range(10):
            await asyncio.sleep(0.1)
            manager.ingest.take(run, 1, all_reduce("begin" if step % 2 == 0 else "end", 0.1 + step))
        manager.ingest.take(run, 1, {"kind": "log", "level": "error", "t": 11, "message": "ValueError: late"})
        run.channels_open = 0
        await asyncio.wait_for(run.finished.wait(), 5)
        return run.error

    assert asyncio.run(scenario())["message"] == "rank 1 raised ValueError: late"


def test_a_channel_that_stays_open_and_quiet_does_not_hold_the_run(tmp_path, monkeypatch):
    """A channel from another host may never close: after CHANNEL_DRAIN_S of quiet the run ends anyway."""
    monkeypatch.setattr(run_outcome, "CHANNEL_DRAIN_S", 0.2)

    async def scenario():
        manager, run = running(tmp_path, 2, channels_open=1)
        manager.ingest.take(run, *report((0, 0, False), (1, 0, False)))
        await asyncio.wait_for(run.finished.wait(), 2)
        return run.status

    assert asyncio.run(scenario()) == "done"


def test_events_from_a_rank_carry_that_rank(tmp_path):
    """A rank speaks only for itself: a `rank` field in its message is overwritten."""
    ended = conclude(tmp_path, 2, [(1, {"kind": "log", "level": "error", "rank": 0, "t": 0.1, "message": "x"}),
                                   report((0, -9, True), (1, 1, False))])
    assert ended["error"]["rank"] == 1


def test_runs_left_in_flight_are_failed_at_start_up_in_record_and_log(tmp_path):
    from app.recording import Recording

    rec = Recording(tmp_path / "runs", "gone")
    rec.create({"id": "gone", "lesson": "crash", "world_size": 2, "params": {}, "created_at": 1.0,
                "status": "running", "error": None, "event_count": 2})
    rec.append('{"seq":1,"rank":null,"t":0.0,"kind":"run","status":"queued"}\n')
    rec.append('{"seq":2,"rank":null,"t":0.5,"kind":"run","status":"running"}\n')
    rec.append('{"seq":3,"rank":0,"t":0.7,"kind":"coll')       # the server died mid-line
    rec.close()
    finished = Recording(tmp_path / "runs", "fine")
    finished.create({"id": "fine", "status": "done"})

    manager = RunManager(Settings(DATA_DIR=tmp_path), Hub())
    manager.store.load_recorded()

    run = manager.get("gone")
    assert (run.status, run.error["kind"]) == ("failed", "interrupted")
    assert [(e["seq"], e["status"]) for e in run.events] == [(1, "queued"), (2, "running"), (3, "failed")]
    assert run.events[-1] == {"seq": 3, "rank": None, "t": 0.5, "kind": "run", "status": "failed",
                              "error": run.error}
    assert Recording(tmp_path / "runs", "fine").load_meta() == {"id": "fine", "status": "done"}


def test_only_the_most_recent_ended_runs_stay_in_memory_and_the_rest_reload(tmp_path):
    """A long-running lab keeps at most RUNS_IN_MEMORY ended runs in memory (the least recently used
    go); a forgotten run still answers, read back from disk with the same events."""
    async def scenario():
        manager = RunManager(Settings(DATA_DIR=tmp_path, RUNS_IN_MEMORY=2), Hub())
        manager.runs_dir.mkdir(parents=True)
        runs = [manager.create("crash", 1, {}, False, "gloo") for _ in range(4)]
        for run in runs:
            run.status = "running"
            manager.ingest.take(run, None, report((0, 0, False))[1])
            await asyncio.wait_for(run.finished.wait(), 5)
        in_memory = set(manager.runs)
        first = manager.get(runs[0].id)                   # from disk, now the most recently used
        return in_memory, first, runs, set(manager.runs)

    in_memory, first, runs, after = asyncio.run(scenario())
    assert in_memory == {runs[2].id, runs[3].id}
    assert first is not runs[0] and first.status == "done"
    assert [e["seq"] for e in first.events] == [e["seq"] for e in runs[0].events]
    assert after == {runs[3].id, runs[0].id}


def test_only_the_ranks_own_events_count_as_progress_for_hang_detection(tmp_path):
    """A flood of pause/continue (the server's own `run` events) must not keep a hung run looking alive."""
    async def scenario():
        manager = RunManager(Settings(DATA_DIR=tmp_path), Hub())
        manager.runs_dir.mkdir(parents=True)
        run = manager.create("crash", 2, {}, True, "gloo")
        run.last_event_at = 0.0
        manager.record(run, {"kind": "run", "status": "running", "stepping": False})
        quiet_after_server_event = run.last_event_at
        manager.record(run, {"kind": "gate", "phase": "waiting", "rank": 0, "t": 0.1})
        return quiet_after_server_event, run.last_event_at

    after_server, after_rank = asyncio.run(scenario())
    assert after_server == 0.0 and after_rank > 0.0
