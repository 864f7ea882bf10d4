"""Journal damage: found at open (one-line error, no traceback), a journal deleted or replaced while open
(refuses new deliveries, saves a rescue copy), and a restart on a new or foreign file refused until the
operator restores the journal or says to start afresh. Real SQLite files, corrupted on disk."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kodiai.jobs.journal import Intake, JobJournal
from kodiai.jobs.journal_guard import (
    JournalDamagedError,
    JournalReplacedError,
    JournalUnavailableError,
    rescued_copies,
    sidecar_path,
)
from support.sqlite_damage import DAMAGES, filled_journal

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda f: f.__name__)
def test_a_damaged_journal_is_refused_at_open_with_one_line(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    db = tmp_path / "jobs.db"
    filled_journal(db)
    damage(db)
    with pytest.raises(JournalDamagedError) as caught:
        JobJournal.open(db)
    message = str(caught.value)
    assert "\n" not in message and f"job journal {db} is damaged" in message
    assert "docs/operations.md" in message


def test_an_unreadable_stored_body_moves_its_delivery_to_dead(tmp_path: Path) -> None:
    """Damage inside a row (the file itself is sound): that delivery is dead, the others replay."""
    db = tmp_path / "jobs.db"
    filled_journal(db, rows=6)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "UPDATE delivery_payloads SET payload = x'28b52ffd00deadbeef' WHERE seq ="
            " (SELECT seq FROM delivery_journal WHERE delivery_id = 'delivery-00000')"
        )
    conn.close()
    journal = JobJournal.open(db)
    try:
        assert [e.delivery_id for e in journal.unfinished()] == ["delivery-00003"]
        row = journal.get("delivery-00000")
        assert row is not None and row["status"] == "dead" and "stored body unreadable" in row["error"]
    finally:
        journal.close()


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_journal_deleted_or_replaced_while_open_refuses_deliveries_and_is_rescued(
    tmp_path: Path, how: str
) -> None:
    db = tmp_path / "jobs.db"
    journal = JobJournal.open(db)
    journal.start_writer()
    try:
        assert await journal.accept_async(
            Intake("kept", "issues", "opened", 1, b'{"action":"opened"}'), now=T0
        )
        if how == "deleted":
            db.unlink()
        else:
            other = tmp_path / "other.db"
            JobJournal.open(other).close()
            os.replace(other, db)
        await until(lambda: journal.health().state == "damaged")  # noticed on the writer's idle tick
        assert how in (journal.health().reason or "")
        with pytest.raises(JournalUnavailableError):
            await journal.accept_async(Intake("new", "issues", "opened", 1, b"{}"), now=T0)
        journal.finish_later("kept", now=T0)  # work already accepted still records its progress
    finally:
        journal.close()

    *_, copy = rescued_copies(db)  # at detection, then a final one at close
    assert sidecar_path(db).exists()
    rescued = sqlite3.connect(copy)
    # the final copy holds what finished after the first one was taken
    assert rescued.execute("SELECT status FROM delivery_journal WHERE delivery_id = 'kept'").fetchone() == (
        "done",
    )
    rescued.close()

    # a restart on whatever is at the path now is refused, naming the rescue copy
    with pytest.raises(JournalReplacedError) as caught:
        JobJournal.open(db)
    assert str(copy) in str(caught.value) and "\n" not in str(caught.value)

    # the operator restores the newest rescued copy: the same journal, so it opens and still knows "kept"
    db.unlink()
    for extra in (Path(f"{db}-wal"), Path(f"{db}-shm")):
        extra.unlink(missing_ok=True)
    os.replace(copy, db)
    restored = JobJournal.open(db)
    try:
        assert restored.unfinished() == [] and restored.seen("kept")
    finally:
        restored.close()


def test_starting_afresh_is_an_explicit_choice(tmp_path: Path) -> None:
    """A new empty file where a journal was is refused; deleting the recorded identity accepts it."""
    db = tmp_path / "jobs.db"
    JobJournal.open(db).close()
    db.unlink()
    with pytest.raises(JournalReplacedError) as caught:
        JobJournal.open(db)
    assert "a new, empty file" in str(caught.value)
    sidecar_path(db).unlink()
    JobJournal.open(db).close()
    JobJournal.open(db).close()  # and from then on this is the journal
