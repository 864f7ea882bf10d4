"""Damage a job journal on disk the ways the journal tests need (real bytes in a real SQLite file)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from kodiai.jobs.journal import Intake, JobJournal

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def filled_journal(db: Path, rows: int = 400) -> None:
    """A journal with ``rows`` deliveries (every third still pending), closed (its WAL checkpointed away)."""
    journal = JobJournal.open(db)
    try:
        for i in range(rows):
            body = b'{"action":"opened","n":%d,"pad":"%s"}' % (i, b"p" * 200)
            journal._accept_now(
                Intake(f"delivery-{i:05d}", "issues", "opened", 1, body), now=T0, journal=True, started=False
            )
            if i % 3:
                journal.finish(f"delivery-{i:05d}", now=T0)
    finally:
        journal.close()
    assert not Path(f"{db}-wal").exists()


def page_of(db: Path, sql: str) -> tuple[int, int]:
    """(page number, page size) of the page ``sql`` selects."""
    conn = sqlite3.connect(db)
    try:
        (page,) = conn.execute(sql).fetchone()
        (size,) = conn.execute("PRAGMA page_size").fetchone()
    finally:
        conn.close()
    return int(page), int(size)


def zero_page(db: Path, page: int, size: int) -> None:
    with db.open("r+b") as fh:
        fh.seek((page - 1) * size)
        fh.write(b"\0" * size)


def zero_index_root(db: Path) -> None:
    """The delivery-id index (every intake writes to it): what made every delivery 500."""
    zero_page(
        db,
        *page_of(db, "SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_delivery_journal_1'"),
    )


def zero_table_leaf(db: Path) -> None:
    """A page in the middle of the journal table (a leaf: the schema and the table's root still parse)."""
    zero_page(
        db,
        *page_of(db, "SELECT MAX(pageno) FROM dbstat WHERE name = 'delivery_journal' AND pagetype = 'leaf'"),
    )


def garbage_header(db: Path) -> None:
    with db.open("r+b") as fh:
        fh.write(b"this is not sqlite at all")


DAMAGES = [zero_index_root, zero_table_leaf, garbage_header]
