"""Group commit: intake writes from concurrent requests share a transaction, results only after COMMIT."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

from kodiai.jobs.journal import Intake, JobJournal, JournalEntry
from kodiai.jobs.journal_writer import Checkpointer

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entry(delivery: str, body: bytes | None = None) -> Intake:
    return Intake(delivery, "issues", "opened", 0, body or b'{"d":"%s"}' % delivery.encode())


async def test_concurrent_accepts_dedup_within_and_across_batches(tmp_path: Path) -> None:
    journal = JobJournal.open(tmp_path / "j.db")
    journal.start_writer()
    try:
        ids = [f"d{i % 50}" for i in range(200)]  # every id four times, in one burst
        results = await asyncio.gather(*(journal.accept_async(entry(d, b'{"x":1}'), now=T0) for d in ids))
        assert sum(results) == 50
        assert {d for d, ok in zip(ids, results, strict=True) if ok} == {f"d{i}" for i in range(50)}
        assert len(journal.unfinished()) == 50
        # no attempt yet: attempts count job starts, not intake
        assert all(e.attempts == 0 and e.payload == {"x": 1} for e in journal.unfinished())
    finally:
        journal.close()


async def test_results_are_durable_when_the_future_resolves(tmp_path: Path) -> None:
    """Once accept_async returns True, another connection already sees the row (it was committed)."""
    db = tmp_path / "j.db"
    journal = JobJournal.open(db)
    journal.start_writer()
    try:
        assert await journal.accept_async(entry("seen"), now=T0)
        other = sqlite3.connect(db)
        assert other.execute("SELECT COUNT(*) FROM delivery_journal WHERE delivery_id='seen'").fetchone() == (
            1,
        )
        other.close()
    finally:
        journal.close()


async def test_one_failing_op_does_not_sink_the_batch(tmp_path: Path) -> None:
    """Each op runs in its own savepoint: a failure is reported to its caller only."""
    journal = JobJournal.open(tmp_path / "j.db")
    journal.start_writer()
    try:
        writer = journal._writer
        assert writer is not None

        def boom(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO delivery_journal (delivery_id, event_name, received_at) VALUES ('b','e','t')"
            )
            raise RuntimeError("bad op")

        bad = writer.submit(boom, wait=True)
        good = journal.accept_async(entry("good"), now=T0)
        results = await asyncio.gather(bad, good, return_exceptions=True)  # type: ignore[arg-type]
        assert isinstance(results[0], RuntimeError) and results[1] is True
        assert not journal.seen("b")  # rolled back to its savepoint
        assert journal.seen("good")
    finally:
        journal.close()


async def test_finish_later_is_ordered_and_applied_before_close(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    journal = JobJournal.open(db)
    journal.start_writer()
    assert await journal.accept_async(entry("f"), now=T0)
    journal.mark_handler_done_later("f", "a")
    journal.mark_handler_done_later("f", "a")
    journal.finish_later("f", now=T0, status="done")
    journal.close()  # drains the queue first
    reopened = JobJournal.open(db)
    row = reopened.get("f")
    assert row is not None and row["status"] == "done" and row["handlers_done"] == '["a"]'
    reopened.close()


def test_later_writes_from_a_sync_caller_are_applied_by_close(tmp_path: Path) -> None:
    """Shutdown paths and sync callers have no loop: their queued writes still land (close drains)."""
    db = tmp_path / "j.db"
    journal = JobJournal.open(db)
    journal.start_writer()
    assert journal.accept(JournalEntry(delivery_id="s", event_name="issues", payload={}), now=T0)
    journal.mark_handler_done_later("s", "a")
    journal.finish_later("s", now=T0, status="done")
    journal.close()
    reopened = JobJournal.open(db)
    row = reopened.get("s")
    assert row is not None and row["status"] == "done" and row["handlers_done"] == '["a"]'
    reopened.close()


async def test_a_burst_shares_a_few_commits(tmp_path: Path) -> None:
    """100 concurrent accepts are committed in a handful of transactions, not one each."""
    journal = JobJournal.open(tmp_path / "j.db")
    journal.start_writer()
    commits: list[str] = []
    journal._db.raw.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    try:
        results = await asyncio.gather(*(journal.accept_async(entry(f"b{i}"), now=T0) for i in range(100)))
        assert all(results) and 1 <= len(commits) <= 10
    finally:
        journal._db.raw.set_trace_callback(None)
        journal.close()


def test_checkpoints_run_on_their_own_thread(tmp_path: Path) -> None:
    """The journal's connection never checkpoints (no fsync on the request path); the checkpointer moves
    the WAL's pages into the database file on its own connection."""
    db = tmp_path / "j.db"
    journal = JobJournal.open(db)
    journal.start_writer()
    try:
        assert journal._db.fetch_one("PRAGMA wal_autocheckpoint") == (0,)
    finally:
        journal.close()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    before = db.stat().st_size
    conn.execute("BEGIN")
    for i in range(500):
        conn.execute(
            "INSERT INTO delivery_journal (delivery_id, event_name, received_at) VALUES (?, 'e', 't')",
            (f"c{i}-" + "x" * 200,),
        )
    conn.execute("COMMIT")
    assert db.stat().st_size == before  # nothing checkpointed by the writer itself
    checkpointer = Checkpointer(db, every=0.05)
    try:
        deadline = time.monotonic() + 10
        while db.stat().st_size == before and time.monotonic() < deadline:
            time.sleep(0.02)
        assert db.stat().st_size > before
    finally:
        checkpointer.stop()
        conn.close()
