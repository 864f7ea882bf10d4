"""The job journal's WAL stays bounded under sustained load.

PASSIVE checkpoints alone never let the WAL restart while the writer commits back to back (there is always
a frame the checkpoint has not reached when the next transaction starts), and overlapping readers hold
it back further: the WAL then grows by every commit (≈ 5 KB a delivery, 124 MB in 3 s under benchmark
load). The journal runs a TRUNCATE checkpoint once the WAL passes its limit.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

from kodiai.jobs.journal import Intake, JobJournal

LIMIT = 1 << 20  # 1 MiB for the test (the server's default is 16 MiB)
DELIVERIES = 16000  # ≈ 80 MB of WAL if it never restarted


def reader(db: Path, stop: threading.Event, offset: float) -> None:
    """A reader holding short read transactions (as the CLI or the mention state do), back to back."""
    conn = sqlite3.connect(db, isolation_level=None)
    stop.wait(offset)
    try:
        while not stop.is_set():
            conn.execute("BEGIN")
            conn.execute("SELECT COUNT(*) FROM delivery_journal").fetchone()
            stop.wait(0.05)
            conn.execute("COMMIT")
    finally:
        conn.close()


async def test_the_wal_stays_under_its_limit_under_sustained_writes_and_overlapping_readers(
    tmp_path: Path,
) -> None:
    db = tmp_path / "jobs.db"
    wal = tmp_path / "jobs.db-wal"
    journal = JobJournal.open(db, wal_limit_bytes=LIMIT)
    journal.start_writer()
    stop = threading.Event()
    readers = [threading.Thread(target=reader, args=(db, stop, offset)) for offset in (0.0, 0.025)]
    for t in readers:
        t.start()
    biggest = 0
    body = b'{"action":"opened","pad":"%s","n":%d}'

    async def producer(first: int) -> None:  # four of these keep the writer busy back to back
        nonlocal biggest
        for start in range(first, DELIVERIES, 200):
            now = datetime.now(UTC)
            ids = range(start, start + 50)
            accepted = await asyncio.gather(
                *(
                    journal.accept_async(
                        Intake(f"d{i}", "issues", "opened", 1, body % (b"x" * 1500, i)), now=now
                    )
                    for i in ids
                )
            )
            assert all(accepted)
            for i in ids:
                journal.finish_later(f"d{i}", now=now)
            biggest = max(biggest, wal.stat().st_size if wal.exists() else 0)

    try:
        await asyncio.gather(*(producer(first) for first in (0, 50, 100, 150)))
    finally:
        stop.set()
        for t in readers:
            t.join()
        journal.close()
    # one TRUNCATE per limit crossed; between two checks the writer adds at most a few batches
    print(f"largest WAL {biggest / 1e6:.1f} MB")
    assert biggest < 8 * LIMIT, f"WAL reached {biggest / 1e6:.1f} MB (limit {LIMIT / 1e6:.1f} MB)"
    reopened = JobJournal.open(db)
    try:
        assert reopened.unfinished() == []
    finally:
        reopened.close()


async def test_a_checkpoint_that_could_not_finish_is_retried_once_the_wal_grows_another_limit(
    tmp_path: Path,
) -> None:
    """A reader holding its snapshot makes the TRUNCATE checkpoint busy. Once it lets go, the next
    checkpoint must not wait for the retry pause (an hour here, so only the growth rule can retry): a
    busy writer adds ~20 MB in the default half second, and one missed checkpoint let the WAL reach 14x its
    limit in a full-suite run."""
    db = tmp_path / "jobs.db"
    wal = tmp_path / "jobs.db-wal"
    journal = JobJournal.open(db, wal_limit_bytes=LIMIT, truncate_retry_seconds=3600)
    journal.start_writer()
    holder = sqlite3.connect(db, isolation_level=None)
    body = b'{"action":"opened","pad":"%s","n":%d}'
    sizes: list[int] = []

    async def write(first: int, count: int) -> None:
        now = datetime.now(UTC)
        for start in range(first, first + count, 50):
            ids = range(start, start + 50)
            intakes = [Intake(f"r{i}", "issues", "opened", 1, body % (b"x" * 1500, i)) for i in ids]
            assert all(await asyncio.gather(*(journal.accept_async(t, now=now) for t in intakes)))
            sizes.append(wal.stat().st_size if wal.exists() else 0)

    try:
        holder.execute("BEGIN")
        holder.execute("SELECT COUNT(*) FROM delivery_journal").fetchone()  # the snapshot is held
        await write(0, 1500)  # ≈ 2.5 MB: past the limit, and the TRUNCATE attempt is busy
        assert max(sizes) > 2 * LIMIT
        holder.execute("COMMIT")
        sizes.clear()
        await write(10_000, 4000)  # ≈ 7 MB more
    finally:
        holder.close()
        journal.close()
    print(f"WAL after the reader let go: largest {max(sizes) / 1e6:.1f} MB, last {sizes[-1] / 1e6:.1f} MB")
    assert sizes[-1] < 4 * LIMIT, f"WAL {sizes[-1] / 1e6:.1f} MB (limit {LIMIT / 1e6:.1f} MB)"
