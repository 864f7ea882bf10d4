"""The job journal's reserve file: completion marks held back on a full disk are saved in space reserved
ahead, so a process killed before space returns (``kill -9``) does not run those jobs again.

The format tests are pure; the kill test runs the journal in a child process over a real 4 MiB tmpfs
(root only), kills it with SIGKILL once its marks are in the reserve, and opens the journal again while the
disk is still full, then after freeing space.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kodiai.jobs.journal import JobJournal
from kodiai.jobs.journal_reserve import Mark, MarkReserve, parse, reserve_path
from support.full_disk import TmpfsDisk, mounted_tmpfs
from support.kodiai_process import wait_until

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DONE = Mark("d-1", "finish", "done", None, T0.isoformat())
FAILED = Mark("d-2", "finish", "failed", 'review: boom \u2014 \n quoted "x"', T0.isoformat())
HANDLER = Mark("d-3", "handler", handler="review")


def test_marks_read_back_in_order_and_the_first_nul_ends_them() -> None:
    data = DONE.encode() + FAILED.encode() + HANDLER.encode() + b"\0" + DONE.encode()
    assert parse(data) == [DONE, FAILED, HANDLER]
    assert parse(bytes(64)) == []
    damaged = [
        b'{"d":"x","k":"finish","s":"done","t":"not a time"}',
        b'{"d":"x","k":"finish","s":"running","t":"2026"}',
    ]
    assert parse(b"\n".join([*damaged, HANDLER.encode()])) == [HANDLER]


def test_a_cut_line_is_skipped_and_the_next_save_starts_a_new_line(tmp_path: Path) -> None:
    db = tmp_path / "jobs.db"
    cut = DONE.encode() + FAILED.encode()[:20]  # a write cut by a power loss
    reserve_path(db).write_bytes(cut + bytes(4096 - len(cut)))
    reserve = MarkReserve(db, size=4096).load()
    assert reserve.found == [DONE] and reserve.ready
    assert reserve.save([HANDLER]) == 1
    assert parse(reserve_path(db).read_bytes()) == [DONE, HANDLER]
    reserve.close()


def test_a_full_reserve_saves_what_fits_and_clear_makes_room(tmp_path: Path) -> None:
    db = tmp_path / "jobs.db"
    reserve = MarkReserve(db, size=len(DONE.encode()) * 2 + 10).load()
    assert not reserve.ready and reserve.ensure()
    assert reserve_path(db).stat().st_size == reserve.size
    assert oct(reserve_path(db).stat().st_mode & 0o777) == "0o600"  # delivery ids and error texts
    assert reserve.save([DONE, DONE, DONE]) == 2
    reserve.clear()
    assert parse(reserve_path(db).read_bytes()) == []
    assert reserve.save([DONE]) == 1
    reserve.close()


# ---------------------------------------------------------------------- kill -9 on a full disk

CHILD = """
import sys
from datetime import UTC, datetime
from kodiai.jobs.journal import JobJournal, JournalEntry

db, n = sys.argv[1], int(sys.argv[2])
journal = JobJournal.open(db)
now = datetime.now(UTC)
for i in range(n):
    journal.accept(JournalEntry(delivery_id=f"d-{i}", event_name="issues", payload={"n": i}), now=now)
journal.start_writer()
print("ready", flush=True)
sys.stdin.readline()  # the disk is full now
for i in range(n):
    journal.finish_later(f"d-{i}", now=now)
print("finished", flush=True)
sys.stdin.readline()  # killed while waiting here
"""
JOBS = 12


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[TmpfsDisk]:
    with mounted_tmpfs(tmp_path) as made:
        yield made


def statuses(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT delivery_id, status FROM delivery_journal").fetchall())
    finally:
        conn.close()


def said(child: subprocess.Popen[bytes], word: bytes) -> None:
    """Read the child's output (its log lines too) until ``word`` on a line of its own."""
    assert child.stdout is not None
    for line in child.stdout:
        if line.rstrip(b"\n").endswith(word):
            return
    raise AssertionError(f"the child exited ({child.wait(10)}) before saying {word!r}")


def test_marks_saved_on_a_full_disk_survive_kill_9(disk: TmpfsDisk) -> None:
    db = disk.where / "jobs.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(JOBS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "LOG_LEVEL": "warning"},
    )
    assert child.stdin is not None and child.stdout is not None
    # a connection of the test's own keeps the WAL and its index file alive across the kill, as the
    # server's would be on a disk that filled up under it (an empty WAL: the next write needs new space)
    keep = sqlite3.connect(db, isolation_level=None)
    try:
        said(child, b"ready")
        wait_until(
            lambda: keep.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0, 10, "a checkpoint"
        )
        disk.fill(0)
        child.stdin.write(b"go\n")
        child.stdin.flush()
        said(child, b"finished")
        reserve = reserve_path(db)
        wait_until(lambda: len(parse(reserve.read_bytes())) == JOBS, 10, "the marks in the reserve")
        child.kill()
        child.wait(10)
        assert set(statuses(db).values()) == {"pending"}  # the journal itself never took them

        journal = JobJournal.open(db)  # still full: the marks cannot be written, and nothing is replayed
        try:
            assert journal.unfinished() == []
            disk.free(0)
            journal.start_writer()
            wait_until(lambda: set(statuses(db).values()) == {"done"}, 10, "the marks in the journal")
            wait_until(lambda: parse(reserve.read_bytes()) == [], 10, "the reserve zeroed")
            assert journal.health().state == "ok"
        finally:
            journal.close()
    finally:
        keep.close()
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=10)
