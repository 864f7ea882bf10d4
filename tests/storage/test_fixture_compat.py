"""The original's Phase 56 databases open, migrate additively and keep every row; the schema after upgrade
is a superset of the original's at cd3cee39."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kodiai.storage.migrations import apply_migrations, migration_status
from kodiai.storage.telemetry import RetrievalQualityRecord, TelemetryStore
from storage.fixture_paths import UPSTREAM_SCHEMA, copy_fixture_db


def _dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(path)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
                "AND name NOT LIKE '%yoyo%'"
            )
        ]
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}
    finally:
        conn.close()


def _schema(path: Path) -> tuple[dict[str, list[str]], set[str]]:
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        columns = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables}
        indexes = {r[1] for t in tables for r in conn.execute(f"PRAGMA index_list({t})")}
        return columns, indexes
    finally:
        conn.close()


def test_fixture_telemetry_has_the_documented_rows(tmp_path: Path) -> None:
    rows = _dump(copy_fixture_db("telemetry", tmp_path))  # opened on a copy: ../shared may be read-only
    assert len(rows["executions"]) == 25 and len(rows["retrieval_quality"]) == 25


@pytest.mark.parametrize("name", ["telemetry", "knowledge"])
def test_fixture_db_migrates_keeps_rows_and_is_upstream_superset(tmp_path: Path, name: str) -> None:
    """Rows identical before/after, schema ⊇ upstream_schema_cd3cee39.json, a second upgrade is a no-op."""
    path = copy_fixture_db(name, tmp_path)
    before = _dump(path)
    applied = apply_migrations(path, name)
    assert applied == [s.id for s in migration_status(path, name)]
    after = _dump(path)
    for table, rows in before.items():
        new_rows = after[table]
        width = len(rows[0]) if rows else 0
        assert [r[:width] for r in new_rows] == rows, table
        assert all(all(v is None for v in r[width:]) for r in new_rows), f"added columns of {table} are NULL"
    upstream = json.loads(UPSTREAM_SCHEMA.read_text())[f"kodiai-{name}.db"]
    columns, indexes = _schema(path)
    for table, cols in upstream["tables"].items():
        assert table in columns, table
        assert set(cols) <= set(columns[table]), (table, set(cols) - set(columns[table]))
    assert set(upstream["indexes"]) <= indexes
    assert apply_migrations(path, name) == []
    assert _dump(path) == after


def test_fixture_telemetry_gains_threshold_method_and_store_writes_it(fixture_telemetry_db: Path) -> None:
    before = _dump(fixture_telemetry_db)
    store = TelemetryStore(fixture_telemetry_db)
    try:
        assert "threshold_method" in store.columns("retrieval_quality")
        existing = before["retrieval_quality"][0]
        delivery = existing[2]
        dup = RetrievalQualityRecord(delivery_id=delivery, repo="x/y", event_type="e", result_count=0)
        if delivery is not None:
            assert store.record_retrieval_quality(dup) is False
        assert store.record_retrieval_quality(
            RetrievalQualityRecord(
                delivery_id="new-after-upgrade",
                repo="x/y",
                event_type="e",
                result_count=2,
                threshold_method="percentile",
            )
        )
    finally:
        store.close()
    after = _dump(fixture_telemetry_db)
    assert len(after["retrieval_quality"]) == 26 and len(after["executions"]) == 25
    conn = sqlite3.connect(fixture_telemetry_db)
    (method,) = conn.execute(
        "SELECT threshold_method FROM retrieval_quality WHERE delivery_id = 'new-after-upgrade'"
    ).fetchone()
    conn.close()
    assert method == "percentile"


def test_fixture_knowledge_opens_with_store_and_is_usable(fixture_knowledge_db: Path) -> None:
    """The original's knowledge file opens with KnowledgeStore (migrating it) and takes the full write path."""
    from kodiai.storage.knowledge import KnowledgeStore
    from kodiai.storage.knowledge_models import FindingRecord, ReviewRecord

    store = KnowledgeStore(fixture_knowledge_db)
    try:
        rid = store.record_review(ReviewRecord(repo="acme/web", pr_number=1, head_sha="h"))
        store.record_findings(
            [
                FindingRecord(
                    review_id=rid,
                    file_path="a.ts",
                    severity="major",
                    category="security",
                    confidence=90,
                    title="t",
                    comment_id=5,
                    comment_surface="s",
                    review_output_key="k",
                )
            ]
        )
        assert [c.comment_id for c in store.list_recent_finding_comment_candidates("acme/web")] == [5]
        assert store.get_repo_stats("acme/web").total_reviews == 1
    finally:
        store.close()
    assert apply_migrations(fixture_knowledge_db, "knowledge") == []


def test_file_from_original_at_cd3cee39_with_threshold_method_already_migrates(
    fixture_telemetry_db: Path,
) -> None:
    """The original added threshold_method itself at cd3cee39: the add-column step must be a no-op there."""
    conn = sqlite3.connect(fixture_telemetry_db)
    conn.execute("ALTER TABLE retrieval_quality ADD COLUMN threshold_method TEXT")
    conn.execute("UPDATE retrieval_quality SET threshold_method = 'adaptive' WHERE id <= 3")
    conn.commit()
    conn.close()
    before = _dump(fixture_telemetry_db)
    assert "0002_retrieval_quality_threshold_method" in apply_migrations(fixture_telemetry_db, "telemetry")
    after = _dump(fixture_telemetry_db)
    width = len(before["retrieval_quality"][0])
    assert [r[:width] for r in after["retrieval_quality"]] == before["retrieval_quality"]
    columns, _ = _schema(fixture_telemetry_db)
    assert columns["retrieval_quality"].count("threshold_method") == 1


def test_older_knowledge_file_without_comment_columns_gains_them(tmp_path: Path) -> None:
    """A knowledge file from before the findings comment-linkage columns: 0002 adds them, rows kept."""
    path = tmp_path / "old-knowledge.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE reviews (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL DEFAULT (datetime('now')),
          repo TEXT NOT NULL, pr_number INTEGER NOT NULL, head_sha TEXT, delivery_id TEXT,
          files_analyzed INTEGER NOT NULL DEFAULT 0, lines_changed INTEGER NOT NULL DEFAULT 0,
          findings_critical INTEGER NOT NULL DEFAULT 0, findings_major INTEGER NOT NULL DEFAULT 0,
          findings_medium INTEGER NOT NULL DEFAULT 0, findings_minor INTEGER NOT NULL DEFAULT 0,
          findings_total INTEGER NOT NULL DEFAULT 0, suppressions_applied INTEGER NOT NULL DEFAULT 0,
          config_snapshot TEXT, duration_ms INTEGER, model TEXT, conclusion TEXT NOT NULL DEFAULT 'unknown');
        CREATE TABLE findings (id INTEGER PRIMARY KEY AUTOINCREMENT, review_id INTEGER NOT NULL REFERENCES reviews(id),
          created_at TEXT NOT NULL DEFAULT (datetime('now')), file_path TEXT NOT NULL, start_line INTEGER,
          end_line INTEGER, severity TEXT NOT NULL, category TEXT NOT NULL, confidence INTEGER NOT NULL,
          title TEXT NOT NULL, suppressed INTEGER NOT NULL DEFAULT 0, suppression_pattern TEXT);
        INSERT INTO reviews (repo, pr_number) VALUES ('acme/web', 3);
        INSERT INTO findings (review_id, file_path, severity, category, confidence, title)
          VALUES (1, 'a.ts', 'major', 'security', 80, 'Old finding');
        """
    )
    conn.commit()
    conn.close()
    before = _dump(path)
    apply_migrations(path, "knowledge")
    columns, _ = _schema(path)
    assert columns["findings"][-3:] == ["comment_id", "comment_surface", "review_output_key"]
    after = _dump(path)
    assert [r[:12] for r in after["findings"]] == before["findings"]
    assert after["reviews"] == before["reviews"]
