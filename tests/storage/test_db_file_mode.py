"""Issue 15 item 12: every SQLite database the app creates (jobs — pending webhook payloads —, knowledge,
telemetry) is mode 0600, and so are its ``-wal``/``-shm`` files; an existing file keeps its mode."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kodiai.jobs.journal import JobJournal
from kodiai.mention.state import MentionState
from kodiai.storage.connection import connect
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.telemetry import TelemetryStore


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The common 022 umask, under which SQLite would create 0644 files."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def sqlite_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.db*") if p.name.endswith((".db", ".db-wal", ".db-shm")))


def test_connect_creates_database_wal_and_shm_0600(tmp_path: Path) -> None:
    db = tmp_path / "nested" / "kodiai.db"
    conn = connect(db)
    try:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")
        files = sqlite_files(tmp_path)
        assert [p.name for p in files] == ["kodiai.db", "kodiai.db-shm", "kodiai.db-wal"]
        assert {p.name: oct(mode(p)) for p in files} == {p.name: "0o600" for p in files}
    finally:
        conn.close()


def _jobs(path: Path) -> Any:
    return JobJournal.open(path)


@pytest.mark.parametrize(
    "open_store",
    [_jobs, MentionState.open, KnowledgeStore, TelemetryStore],
    ids=["jobs-journal", "jobs-mention-state", "knowledge", "telemetry"],
)
def test_every_store_creates_private_files(tmp_path: Path, open_store: Callable[[Path], Any]) -> None:
    db = tmp_path / "data" / "store.db"
    store = open_store(db)
    try:
        files = sqlite_files(tmp_path)
        assert db in files
        assert {p.name: oct(mode(p)) for p in files} == {p.name: "0o600" for p in files}
    finally:
        store.close()


def test_existing_database_keeps_its_mode_and_opens(tmp_path: Path) -> None:
    db = tmp_path / "telemetry.db"
    conn = connect(db)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    os.chmod(db, 0o640)  # an operator's choice (e.g. a backup group) is not changed behind their back
    conn = connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
        assert mode(db) == 0o640
    finally:
        conn.close()


def test_read_only_and_memory_connections_create_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        connect(tmp_path / "absent.db", read_only=True)
    connect(":memory:").close()
    assert list(tmp_path.iterdir()) == []
