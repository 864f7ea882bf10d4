"""Store write health (kodiai.storage.write_health): which failures mean "cannot write", and the state
readiness reads. The end-to-end case (a real full tmpfs under ``kodiai serve``) is
tests/server/test_full_disk_stores.py."""

from __future__ import annotations

import errno
import sqlite3
import threading
import time
from pathlib import Path

import psycopg
import psycopg_pool
import pytest
from structlog.testing import capture_logs

from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import FindingRecord, ReviewRecord
from kodiai.storage.telemetry import TelemetryStore
from kodiai.storage.write_health import (
    WriteHealth,
    classify,
    database_directory,
    local_directory,
    reports_writes,
)

FULL = "database or disk is full"
LANCE_FULL = (
    "lance error: LanceError(IO): No space left on device (os error 28), "
    "/root/.cargo/registry/src/lance-file-13.0.0/src/writer/structural.rs:258:9"
)


def sqlite_full() -> sqlite3.OperationalError:
    """A real SQLITE_FULL: a database capped at two pages cannot take a large row."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE t (x BLOB)")
        conn.execute("PRAGMA max_page_count = 2")
        with pytest.raises(sqlite3.OperationalError) as caught:
            conn.execute("INSERT INTO t VALUES (zeroblob(100000))")
        return caught.value
    finally:
        conn.close()


def sqlite_integrity() -> sqlite3.IntegrityError:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE t (x INTEGER UNIQUE)")
        conn.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(sqlite3.IntegrityError) as caught:
            conn.execute("INSERT INTO t VALUES (1)")
        return caught.value
    finally:
        conn.close()


def chained(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise outer from exc
    except BaseException as exc:
        return exc


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (sqlite_full(), "no_space"),
        (sqlite3.OperationalError("database or disk is full"), "no_space"),  # no result code attached
        (sqlite3.OperationalError("disk I/O error"), "io"),
        (OSError(errno.ENOSPC, "No space left on device"), "no_space"),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), "no_space"),
        (OSError(errno.EFBIG, "File too large"), "no_space"),  # RLIMIT_FSIZE: as full as a full disk
        (OSError(errno.EIO, "Input/output error"), "io"),
        (RuntimeError(LANCE_FULL), "no_space"),
        (RuntimeError("lance error: LanceError(IO): File too large (os error 27)"), "no_space"),
        (RuntimeError("lance error: LanceError(IO): Input/output error (os error 5)"), "io"),
        (chained(RuntimeError("write failed"), OSError(errno.ENOSPC, "full")), "no_space"),
        (sqlite_integrity(), "other"),
        (sqlite3.OperationalError("database is locked"), "other"),
        (sqlite3.ProgrammingError("Cannot operate on a closed database."), "other"),
        (OSError(errno.EACCES, "Permission denied"), "other"),
        (RuntimeError("lance error: (os error 50)"), "other"),  # not errno 5
        (ValueError("invalid repo name"), "other"),
        # PostgreSQL (DATABASE_URL): psycopg's errors carry the SQLSTATE
        (psycopg.errors.DiskFull("could not extend file: No space left on device"), "no_space"),
        (psycopg.errors.IoError("could not read block"), "io"),
        (psycopg.errors.ConnectionFailure("server closed the connection"), "io"),
        (psycopg_pool.PoolTimeout("couldn't get a connection after 30.00 sec"), "io"),
        (psycopg.errors.UniqueViolation("duplicate key value violates unique constraint"), "other"),
        (psycopg.errors.UndefinedTable("no such table: disk I/O error"), "other"),  # the SQLSTATE wins
    ],
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,
)
def test_classify(exc: BaseException, kind: str) -> None:
    assert classify(exc) == kind


def test_sqlite_result_code_wins_over_the_text() -> None:
    exc = sqlite3.OperationalError("disk I/O error")
    exc.sqlite_errorcode = 5  # SQLITE_BUSY, whatever the text says
    assert classify(exc) == "other"
    exc.sqlite_errorcode = 10 | (4 << 8)  # SQLITE_IOERR_WRITE
    assert classify(exc) == "io"


def test_probe_directories(tmp_path: Path) -> None:
    assert database_directory(":memory:") is None
    assert database_directory(tmp_path / "k.db") == tmp_path
    assert local_directory(str(tmp_path / "memory.lance")) == tmp_path / "memory.lance"
    assert local_directory(f"file://{tmp_path}/m") == tmp_path / "m"
    assert local_directory("s3://bucket/memory") is None


def test_a_full_disk_fails_the_store_once_and_a_probe_write_clears_it(tmp_path: Path) -> None:
    where = tmp_path / "not-yet"  # the probe cannot write here until the directory exists
    health = WriteHealth("knowledge", where, probe_every=0.02)
    seen: list[tuple[str, str]] = []
    health.observe(lambda store, kind: seen.append((store, kind)))
    try:
        with capture_logs() as logs:
            assert health.failed(sqlite_full()) == "no_space"
            assert health.failed(sqlite_full()) == "no_space"
            assert health.failure == "knowledge store cannot write: database or disk is full"
            assert not health.probe()
            time.sleep(0.1)  # several probe rounds fail
            assert health.failure is not None
            health.succeeded()  # a small write landing proves nothing on a full disk: the probe decides
            assert health.failure is not None
            where.mkdir()
            deadline = time.monotonic() + 10
            while health.failure is not None and time.monotonic() < deadline:
                time.sleep(0.01)
            assert health.failure is None
        assert [(e["log_level"], e["event"]) for e in logs] == [
            (
                "warning",
                "Store cannot write; not ready until a probe write lands (its fail-open writes are lost)",
            ),
            ("info", "Store writes landing again; ready"),
        ]
        assert seen == [("knowledge", "no_space")] * 2
        assert health.counts() == {"no_space": 2}
        assert list(where.iterdir()) == []  # the probe file is removed
    finally:
        health.close()


def test_other_failures_are_counted_without_failing_the_store() -> None:
    health = WriteHealth("telemetry", None)
    with capture_logs() as logs:
        assert health.failed(sqlite_integrity()) == "other"
    assert health.failure is None
    assert health.counts() == {"other": 1}
    assert logs == []


def test_without_a_probe_the_next_successful_write_clears_it() -> None:
    health = WriteHealth("memory", None)  # object storage: no local directory to probe
    health.failed(RuntimeError(LANCE_FULL))
    assert health.failure is not None and health.failure.startswith("memory store cannot write: lance error")
    health.succeeded()
    assert health.failure is None


class _Store:
    def __init__(self) -> None:
        self.write_health = WriteHealth("knowledge", None)

    @reports_writes
    def outer(self) -> None:
        self.inner()

    @reports_writes
    def inner(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_write_method_calling_another_is_reported_once() -> None:
    store = _Store()
    with pytest.raises(OSError):
        store.outer()
    assert store.write_health.counts() == {"no_space": 1}
    with pytest.raises(OSError):  # the nesting depth was restored
        store.inner()
    assert store.write_health.counts() == {"no_space": 2}


def test_reports_are_per_thread() -> None:
    store = _Store()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            store.inner()
        except OSError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 8 and store.write_health.counts() == {"no_space": 8}


def test_knowledge_store_reports_a_full_database(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path / "knowledge.db")
    try:
        review = store.record_review(ReviewRecord(repo="acme/widgets", pr_number=1))
        store._db.execute("PRAGMA max_page_count = 1")  # the file is larger: nothing more fits
        with capture_logs() as logs, pytest.raises(sqlite3.OperationalError, match="full"):
            store.record_findings(
                [
                    FindingRecord(
                        review_id=review,
                        file_path="a.py",
                        severity="major",
                        category="c",
                        confidence=80,
                        title="x" * 9000,
                    )
                ]
            )
        # (the probe clears the state a second later: this directory has space)
        assert [(e["store"], e["kind"], e["err"]) for e in logs] == [("knowledge", "no_space", FULL)]
        with pytest.raises(sqlite3.IntegrityError):  # a broken foreign key is the record's fault
            store.record_findings(
                [
                    FindingRecord(
                        review_id=review + 99,
                        file_path="a.py",
                        severity="major",
                        category="c",
                        confidence=80,
                        title="y",
                    )
                ]
            )
        assert store.write_health.counts() == {"no_space": 1, "other": 1}
    finally:
        store.close()


def test_telemetry_store_reports_a_full_database(tmp_path: Path) -> None:
    store = TelemetryStore(tmp_path / "telemetry.db")
    try:
        store._db.execute("PRAGMA max_page_count = 1")
        with capture_logs() as logs, pytest.raises(sqlite3.OperationalError, match="full"):
            store.record(
                {
                    "repo": "acme/widgets",
                    "event_type": "pull_request.opened",
                    "model": "m" * 9000,
                    "conclusion": "ok",
                }
            )
        assert [(e["store"], e["kind"], e["err"]) for e in logs] == [("telemetry", "no_space", FULL)]
        assert store.write_health.counts() == {"no_space": 1}
    finally:
        store.close()
