"""A backup taken while the stores are being written is consistent and opens (issue 24).

Writers run on their own threads during the backups: SQLite transactions of 10 rows each, and learned
memories written in batches of 4 with LanceDB compaction *and cleanup of every older version* in between
(harsher than the server, whose cleanup keeps a week). Every copy must open, pass its checks, and hold
whole batches only: no transaction or memory batch half there, no memory id missing.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from kodiai.learning.memory_store import LanceMemoryStore, open_memory_store
from kodiai.learning.types import LearningMemoryRecord
from kodiai.maintenance.backup import StorePaths, create_backup, verify_backup
from kodiai.maintenance.backup_lance import copy_table
from kodiai.storage.connection import connect
from learning.learning_helpers import make_record

BATCH_ROWS = 10
MEMORY_BATCH = 4


def record(i: int) -> LearningMemoryRecord:
    return make_record("acme/repo", i, file_path=f"src/f{i % 7}.py", model="test", dim=8)


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_backups_during_writes_are_consistent_copies(tmp_path: Path) -> None:
    data = tmp_path / "data"
    paths = StorePaths(data / "telemetry.db", data / "knowledge.db", data / "jobs.db", str(data / "memory"))
    conn = connect(paths.telemetry)
    conn.execute("CREATE TABLE batches (batch INTEGER, i INTEGER)")
    store = open_memory_store(paths.memory, dimensions=8, table_name="learning_memories_d8")
    store.write_memories([record(i) for i in range(MEMORY_BATCH)], np.eye(8)[:MEMORY_BATCH])
    stop = threading.Event()
    errors: list[BaseException] = []

    def sqlite_writer() -> None:
        writer = connect(paths.telemetry)
        batch = 0
        try:
            while not stop.is_set():
                writer.execute("BEGIN")
                writer.executemany(
                    "INSERT INTO batches VALUES (?, ?)", [(batch, i) for i in range(BATCH_ROWS)]
                )
                writer.execute("COMMIT")
                batch += 1
        except BaseException as exc:
            errors.append(exc)
        finally:
            writer.close()

    def memory_writer() -> None:
        n = MEMORY_BATCH
        rng = np.random.default_rng(0)
        try:
            while not stop.is_set():
                store.write_memories(
                    [record(n + j) for j in range(MEMORY_BATCH)], rng.normal(size=(MEMORY_BATCH, 8))
                )
                n += MEMORY_BATCH
                if n % (2 * MEMORY_BATCH) == 0:
                    store.with_table(lambda t: t.optimize(cleanup_older_than=timedelta(0)))
                time.sleep(0.005)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=sqlite_writer), threading.Thread(target=memory_writer)]
    for thread in threads:
        thread.start()
    try:
        manifests = []
        for k in range(3):
            time.sleep(0.2)
            manifests.append(create_backup(paths, tmp_path / f"backup-{k}", kodiai_version="test"))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        conn.close()
        store.close()
    assert not errors

    for k, manifest in enumerate(manifests):
        backup = tmp_path / f"backup-{k}"
        _, problems = verify_backup(backup)
        assert problems == []
        copy = sqlite3.connect(backup / "telemetry.db")
        sizes = {n for (n,) in copy.execute("SELECT COUNT(*) FROM batches GROUP BY batch")}
        rows = copy.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
        copy.close()
        assert sizes == {BATCH_ROWS} and rows == manifest.databases["telemetry"].tables["batches"]

        ids = _ids(backup / "memory" / "learning_memories_d8.lance")
        assert len(ids) % MEMORY_BATCH == 0 and ids == list(range(1, len(ids) + 1))
        assert len(ids) == manifest.memory.tables["learning_memories_d8"]["rows"]  # type: ignore[union-attr]
    # The copies are of moments apart: the writers really ran during them.
    assert len({m.memory.tables["learning_memories_d8"]["version"] for m in manifests}) == 3  # type: ignore[union-attr]


def _store_with_history(path: Path) -> LanceMemoryStore:
    store = open_memory_store(str(path), dimensions=8, table_name="learning_memories_d8")
    for n in range(0, 3 * MEMORY_BATCH, MEMORY_BATCH):
        store.write_memories([record(n + j) for j in range(MEMORY_BATCH)], np.eye(8)[:MEMORY_BATCH])
    return store


def _ids(table_dir: Path) -> list[int]:
    copied = open_memory_store(str(table_dir.parent), dimensions=8, table_name="learning_memories_d8")
    try:
        return sorted(
            copied.with_table(lambda t: t.search().select(["id"]).to_arrow().column("id").to_pylist())
        )
    finally:
        copied.close()


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
@pytest.mark.parametrize("stage", ["listed", "copied"])
def test_a_commit_or_cleanup_in_the_middle_of_a_pass_is_not_half_copied(tmp_path: Path, stage: str) -> None:
    """At ``listed`` the server writes and cleans every older version up (the listed latest version and
    its files are gone before they are copied); at ``copied`` it commits a version whose files the pass
    did not copy. Either way the copy is a whole version, the source's latest."""
    store = _store_with_history(tmp_path / "memory")
    table = tmp_path / "memory" / "learning_memories_d8.lance"
    passes: list[str] = []

    def meanwhile(name: str) -> None:
        passes.append(name)
        if name == stage and passes.count(name) == 1:
            store.write_memories(
                [record(100 + j) for j in range(MEMORY_BATCH)], np.eye(8)[MEMORY_BATCH : 2 * MEMORY_BATCH]
            )
            if stage == "listed":
                store.with_table(lambda t: t.optimize(cleanup_older_than=timedelta(0)))

    try:
        summary = copy_table(table, tmp_path / "copy" / table.name, stage=meanwhile)
        latest = store.with_table(lambda t: t.version)
    finally:
        store.close()
    assert passes.count("listed") == 2  # the disturbed pass was repeated
    assert summary.version == latest and summary.rows == 4 * MEMORY_BATCH
    assert _ids(tmp_path / "copy" / table.name) == list(range(1, 4 * MEMORY_BATCH + 1))
