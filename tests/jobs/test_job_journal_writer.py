"""Group commit: intake writes from concurrent requests share a transaction, results only after COMMIT."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from kodiai.jobs.journal import Intake, JobJournal

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entry(delivery: str, body: bytes | None = None) -> Intake:
    return Intake(delivery, "issues", "opened", 0, body or b'{"d":"%s"}' % delivery.encode())


async def test_concurrent_accepts_dedup_within_and_across_batches(tmp_path: Path) -> None:
    journal = JobJournal.open(tmp_path / "j.db")
    journal.start_writer()
    try:
        ids = [f"d{i % 50}" for i in range(200)]  # every id four times, in one burst
        results = await asyncio.gather(
            *(journal.accept_async(entry(d, b'{"x":1}'), now=T0) for d in ids)
        )
        assert sum(results) == 50
        assert {d for d, ok in zip(ids, results, strict=True) if ok} == {f"d{i}" for i in range(50)}
        assert len(journal.unfinished()) == 50
        assert all(e.attempts == 1 and e.payload == {"x": 1} for e in journal.unfinished())
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
        assert other.execute("SELECT COUNT(*) FROM delivery_journal WHERE delivery_id='seen'").fetchone() == (1,)
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
