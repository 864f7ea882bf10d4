"""Telemetry store (behaviour P6.1, checklist P8.2) on real SQLite files and on a real PostgreSQL.

Tests taking ``db_backend`` run on both; the others check what only SQLite has (WAL, checkpoints, files)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from kodiai.storage.telemetry import CHECKPOINT_EVERY, ExecutionRecord, RetrievalQualityRecord, TelemetryStore
from support.db_backends import DbBackend


def _full_execution() -> ExecutionRecord:
    return ExecutionRecord(
        delivery_id="d-1",
        repo="acme/widgets",
        pr_number=42,
        event_type="pull_request.opened",
        provider="anthropic",
        model="claude-sonnet-4",
        input_tokens=1200,
        output_tokens=340,
        cache_read_tokens=50,
        cache_creation_tokens=7,
        duration_ms=45000,
        cost_usd=0.0123,
        conclusion="success",
        session_id="sess-9",
        num_turns=6,
        stop_reason="end_turn",
    )


@pytest.fixture
def store(tmp_path: Path):
    s = TelemetryStore(tmp_path / "telemetry.db")
    yield s
    s.close()


@pytest.fixture
def any_store(db_backend: DbBackend):
    s = TelemetryStore(db_backend.target("telemetry"))
    yield s
    s.close()


def _read(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[sqlite3.Row]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_8_2_01_record_stores_every_field(any_store: TelemetryStore, db_backend: DbBackend) -> None:
    """P8.2 #1: record stores every field in its column, read back by a second connection."""
    any_store.record(_full_execution())
    rows = db_backend.rows("telemetry", "SELECT * FROM executions")
    assert len(rows) == 1
    row = dict(rows[0])
    expected = _full_execution().model_dump()
    assert {k: row[k] for k in expected} == expected
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", row["created_at"])  # SQLite's datetime('now')


def test_8_2_02_record_minimal_fields_applies_defaults(
    any_store: TelemetryStore, db_backend: DbBackend
) -> None:
    """P8.2 #2: minimal record → provider anthropic, zero counts/cost, NULL optionals."""
    any_store.record(
        ExecutionRecord(repo="a/b", event_type="issue_comment.created", model="unknown", conclusion="error")
    )
    row = db_backend.rows("telemetry", "SELECT * FROM executions")[0]
    assert row["provider"] == "anthropic"
    for col in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "duration_ms"):
        assert row[col] == 0
    assert row["cost_usd"] == 0
    for col in ("delivery_id", "pr_number", "session_id", "num_turns", "stop_reason"):
        assert row[col] is None


def _backdate(backend: DbBackend, table: str, modifier: str) -> None:
    """The same SQL on both databases: PostgreSQL has SQLite's datetime() from a migration."""
    backend.write("telemetry", f"UPDATE {table} SET created_at = datetime('now', ?)", (modifier,))


def test_8_2_03_purge_zero_days_deletes_backdated_row(
    any_store: TelemetryStore, db_backend: DbBackend
) -> None:
    """P8.2 #3: purgeOlderThan(0) deletes a row back-dated by 1 day and returns 1."""
    any_store.record(_full_execution())
    _backdate(db_backend, "executions", "-1 day")
    assert any_store.purge_older_than(0) == 1
    assert db_backend.scalar("telemetry", "SELECT COUNT(*) FROM executions") == 0


def test_8_2_04_purge_ninety_days_keeps_fresh_row(any_store: TelemetryStore, db_backend: DbBackend) -> None:
    """P8.2 #4: purgeOlderThan(90) keeps a fresh row and returns 0."""
    any_store.record(_full_execution())
    assert any_store.purge_older_than(90) == 0
    assert db_backend.scalar("telemetry", "SELECT COUNT(*) FROM executions") == 1


def test_purge_never_touches_retrieval_quality_and_is_strict(
    any_store: TelemetryStore, db_backend: DbBackend
) -> None:
    """P6.1: purge deletes only executions strictly older than the cut; retrieval_quality is never purged."""
    any_store.record(_full_execution())
    any_store.record(_full_execution())
    any_store.record_retrieval_quality(
        RetrievalQualityRecord(repo="a/b", event_type="pull_request.opened", result_count=0)
    )
    _backdate(db_backend, "executions", "-100 days")
    db_backend.write(
        "telemetry", "UPDATE executions SET created_at = datetime('now', '-89 days') WHERE id = 2"
    )
    _backdate(db_backend, "retrieval_quality", "-100 days")
    assert any_store.purge_older_than(90) == 1
    assert db_backend.scalar("telemetry", "SELECT COUNT(*) FROM retrieval_quality") == 1
    assert db_backend.scalar("telemetry", "SELECT id FROM executions") == 2
    with pytest.raises(ValueError):
        any_store.purge_older_than(-1)


def test_8_2_05_checkpoint_does_not_throw(store: TelemetryStore) -> None:
    """P8.2 #5: checkpoint() does not throw (PASSIVE: never busy-waits, reports SQLite's triple)."""
    store.record(_full_execution())
    busy, log_frames, checkpointed = store.checkpoint()
    assert busy == 0
    assert log_frames >= checkpointed >= 0


def test_8_2_06_journal_mode_is_wal(store: TelemetryStore) -> None:
    """P8.2 #6: journal mode is wal after initialisation (seen from a second connection too)."""
    assert store.journal_mode() == "wal"
    assert _read(Path(store.path), "PRAGMA journal_mode")[0][0] == "wal"


def test_8_2_07_any_operation_after_close_throws(db_backend: DbBackend) -> None:
    """P8.2 #7: any operation after close() throws; close itself never throws (twice is fine)."""
    s = TelemetryStore(db_backend.target("telemetry"))
    s.close()
    s.close()
    with pytest.raises(sqlite3.ProgrammingError):
        s.record(_full_execution())
    with pytest.raises(sqlite3.ProgrammingError):
        s.record_retrieval_quality(RetrievalQualityRecord(repo="a/b", event_type="x", result_count=1))
    with pytest.raises(sqlite3.ProgrammingError):
        s.purge_older_than(1)
    with pytest.raises(sqlite3.ProgrammingError):
        s.checkpoint()


def test_8_2_08_thousand_writes_trigger_auto_checkpoint(store: TelemetryStore) -> None:
    """P8.2 #8: 1000 writes trigger an auto-checkpoint (counter resets) and the DB stays usable."""
    for _ in range(CHECKPOINT_EVERY - 1):
        store.record(_full_execution())
    assert store.auto_checkpoints == 0
    assert store.writes_since_checkpoint == CHECKPOINT_EVERY - 1
    store.record(_full_execution())
    assert store.auto_checkpoints == 1
    assert store.writes_since_checkpoint == 0
    store.record(_full_execution())
    assert _read(Path(store.path), "SELECT COUNT(*) FROM executions")[0][0] == CHECKPOINT_EVERY + 1


def test_8_2_09_retrieval_quality_stores_all_fields_and_dedups(
    any_store: TelemetryStore, db_backend: DbBackend
) -> None:
    """P8.2 #9: recordRetrievalQuality stores all fields; a duplicate delivery id adds no second row."""
    rec = RetrievalQualityRecord(
        delivery_id="dlv-7",
        repo="acme/widgets",
        pr_number=9,
        event_type="pull_request.synchronize",
        top_k=5,
        distance_threshold=0.3,
        result_count=3,
        avg_distance=0.21,
        language_match_ratio=0.6667,
        threshold_method="adaptive",
    )
    assert any_store.record_retrieval_quality(rec) is True
    assert any_store.record_retrieval_quality(rec.model_copy(update={"result_count": 99})) is False
    rows = db_backend.rows("telemetry", "SELECT * FROM retrieval_quality")
    assert len(rows) == 1
    assert {k: rows[0][k] for k in rec.model_dump()} == rec.model_dump()


def test_retrieval_quality_null_delivery_ids_never_conflict(
    any_store: TelemetryStore, db_backend: DbBackend
) -> None:
    """P6.1: the unique index is partial (delivery_id IS NOT NULL): rows without a delivery id all land."""
    rec = RetrievalQualityRecord(repo="a/b", event_type="pull_request.opened", result_count=0)
    assert any_store.record_retrieval_quality(rec) and any_store.record_retrieval_quality(rec)
    row = db_backend.rows("telemetry", "SELECT * FROM retrieval_quality")[0]
    assert row["top_k"] is None and row["avg_distance"] is None and row["threshold_method"] is None
    assert db_backend.scalar("telemetry", "SELECT COUNT(*) FROM retrieval_quality") == 2


def test_8_2_10_retrieval_writes_count_toward_auto_checkpoint(store: TelemetryStore) -> None:
    """P8.2 #10: retrieval-quality writes share the counter (999 executions + 1 retrieval write)."""
    for _ in range(CHECKPOINT_EVERY - 1):
        store.record(_full_execution())
    store.record_retrieval_quality(RetrievalQualityRecord(repo="a/b", event_type="x", result_count=0))
    assert store.auto_checkpoints == 1
    assert store.writes_since_checkpoint == 0


def test_8_2_11_missing_parent_directories_are_created(tmp_path: Path) -> None:
    """P8.2 #11: missing nested parent directories are created."""
    path = tmp_path / "a" / "b" / "c" / "telemetry.db"
    s = TelemetryStore(path)
    s.close()
    assert path.is_file()


def test_8_2_12_execution_indexes_exist(store: TelemetryStore) -> None:
    """P8.2 #12: indexes idx_executions_created_at and idx_executions_repo exist (plus the retrieval ones)."""
    names = {r[0] for r in _read(Path(store.path), "SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {
        "idx_executions_created_at",
        "idx_executions_repo",
        "idx_retrieval_quality_delivery",
        "idx_retrieval_quality_repo_created",
    } <= names


def test_extra_fields_written_only_when_the_column_exists(tmp_path: Path) -> None:
    """Extra fields for later additive columns: written when the table has them, dropped otherwise."""
    path = tmp_path / "t.db"
    s = TelemetryStore(path)
    s.record_retrieval_quality(
        RetrievalQualityRecord(delivery_id="a", repo="r", event_type="e", result_count=1, confident_count=2)
    )
    s.close()
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE retrieval_quality ADD COLUMN confident_count INTEGER")
    conn.close()
    s = TelemetryStore(path)
    assert "confident_count" in s.columns("retrieval_quality")
    s.record_retrieval_quality(
        RetrievalQualityRecord(delivery_id="b", repo="r", event_type="e", result_count=1, confident_count=2)
    )
    s.close()
    rows = _read(path, "SELECT delivery_id, confident_count FROM retrieval_quality ORDER BY id")
    assert [tuple(r) for r in rows] == [("a", None), ("b", 2)]


def test_memory_database_is_migrated(tmp_path: Path) -> None:
    """`:memory:` is allowed: the store migrates its own private connection."""
    s = TelemetryStore(":memory:")
    s.record(_full_execution())
    assert "threshold_method" in s.columns("retrieval_quality")
    s.close()
    assert not any(tmp_path.iterdir())


def test_writes_from_worker_threads_are_serialised(any_store: TelemetryStore, db_backend: DbBackend) -> None:
    """The server writes from worker threads (SQLite: one shared connection; PostgreSQL: a pool); every
    write lands."""
    store = any_store
    from concurrent.futures import ThreadPoolExecutor

    def work(i: int) -> None:
        store.record(_full_execution())
        store.record_retrieval_quality(
            RetrievalQualityRecord(delivery_id=f"d{i}", repo="a/b", event_type="e", result_count=i)
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(work, range(200)))
    assert db_backend.scalar("telemetry", "SELECT COUNT(*) FROM executions") == 200
    assert db_backend.scalar("telemetry", "SELECT COUNT(*) FROM retrieval_quality") == 200


def test_retrieval_row_of_another_model_or_mapping_is_accepted(
    any_store: TelemetryStore, db_backend: DbBackend
) -> None:
    """The learning pipeline hands its own pydantic row (with the 0100 confidence columns); a dict works too."""
    from pydantic import BaseModel, ValidationError

    store = any_store

    class ForeignRow(BaseModel):
        delivery_id: str | None
        repo: str
        pr_number: int | None
        event_type: str
        top_k: int
        distance_threshold: float
        result_count: int
        avg_distance: float | None
        language_match_ratio: float | None
        threshold_method: str
        confidence_high: int | None = None

    row = ForeignRow(
        delivery_id="f-1",
        repo="a/b",
        pr_number=1,
        event_type="pull_request",
        top_k=5,
        distance_threshold=0.3,
        result_count=2,
        avg_distance=0.2,
        language_match_ratio=1.0,
        threshold_method="adaptive",
        confidence_high=2,
    )
    assert store.record_retrieval_quality(row)
    assert store.record_retrieval_quality(
        {"delivery_id": "f-2", "repo": "a/b", "event_type": "e", "result_count": 0}
    )
    with pytest.raises(ValidationError):
        store.record_retrieval_quality({"delivery_id": "f-3", "repo": "a/b"})
    store.record({"repo": "a/b", "event_type": "e", "model": "m", "conclusion": "success"})
    assert "confidence_high" in store.columns("retrieval_quality")
    got = db_backend.rows("telemetry", "SELECT * FROM retrieval_quality ORDER BY id")
    assert [r["delivery_id"] for r in got] == ["f-1", "f-2"]
    assert got[0]["threshold_method"] == "adaptive"
    assert got[0]["confidence_high"] == 2
    assert db_backend.scalar("telemetry", "SELECT COUNT(*) FROM executions") == 1


def test_execution_indexes_exist_on_postgres(postgres_url: str) -> None:
    """P8.2 #12 on PostgreSQL: the same index names (operators' plans and docs name them)."""
    TelemetryStore(postgres_url).close()
    backend = DbBackend("postgres", Path("."), postgres_url)
    names = {r["indexname"] for r in backend.rows("telemetry", "SELECT indexname FROM pg_indexes")}
    assert {
        "idx_executions_created_at",
        "idx_executions_repo",
        "idx_retrieval_quality_delivery",
        "idx_retrieval_quality_repo_created",
        "idx_spend_ledger_installation_created",
    } <= names


def test_extra_fields_written_when_a_postgres_table_has_the_column(empty_postgres_url: str) -> None:
    """A column added later (by an operator or a newer migration) is picked up when the store opens."""
    s = TelemetryStore(empty_postgres_url)
    s.close()
    backend = DbBackend("postgres", Path("."), empty_postgres_url)
    backend.write("telemetry", "ALTER TABLE retrieval_quality ADD COLUMN confident_count BIGINT")
    s = TelemetryStore(empty_postgres_url)
    try:
        s.record_retrieval_quality(
            RetrievalQualityRecord(
                delivery_id="b", repo="r", event_type="e", result_count=1, confident_count=2
            )
        )
    finally:
        s.close()
    assert backend.rows("telemetry", "SELECT confident_count FROM retrieval_quality") == [
        {"confident_count": 2}
    ]
