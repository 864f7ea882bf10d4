"""The spend ledger of the telemetry database: what the daily spend cap sums, on a real SQLite file and on a
real PostgreSQL (``db_backend``)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kodiai.storage.telemetry import SpendEntry, TelemetryStore
from support.db_backends import DbBackend

DAY = datetime(2031, 5, 6, tzinfo=UTC)


def entry(
    at: datetime,
    cost: float,
    *,
    installation: int = 42,
    repo: str = "acme/repo",
    outcome: str = "run",
    reason: str | None = None,
) -> SpendEntry:
    return SpendEntry(
        created_at=at,
        installation_id=installation,
        repo=repo,
        number=7,
        kind="review",
        outcome=outcome,
        reason=reason,
        cost_usd=cost,
    )


def test_spend_is_summed_per_installation_utc_day_and_repo(db_backend: DbBackend) -> None:
    store = TelemetryStore(db_backend.target("telemetry"))
    try:
        store.record_spend(entry(DAY - timedelta(seconds=1), 100.0))  # yesterday, 23:59:59
        store.record_spend(entry(DAY, 1.5))  # today, 00:00:00
        store.record_spend(entry(DAY + timedelta(hours=23, minutes=59, seconds=59), 0.25, repo="acme/other"))
        store.record_spend(entry(DAY + timedelta(hours=3), 0.0, outcome="refused", reason="installation-cap"))
        store.record_spend(entry(DAY + timedelta(hours=1), 7.0, installation=43))
        store.record_spend(entry(DAY + timedelta(days=1), 9.0))  # tomorrow
        assert store.spend_between(42, "acme/repo", DAY, DAY + timedelta(days=1)) == (1.75, 1.5)
        assert store.spend_between(42, "acme/none", DAY, DAY + timedelta(days=1)) == (1.75, 0.0)
        assert store.spend_between(44, "acme/repo", DAY, DAY + timedelta(days=1)) == (0.0, 0.0)
    finally:
        store.close()
    rows = db_backend.rows(
        "telemetry", "SELECT created_at, outcome, reason FROM spend_ledger WHERE outcome = 'refused'"
    )
    assert rows == [{"created_at": "2031-05-06 03:00:00", "outcome": "refused", "reason": "installation-cap"}]


def test_the_cap_query_uses_the_installation_index(tmp_path: Path) -> None:
    store = TelemetryStore(tmp_path / "t.db")
    store.close()
    conn = sqlite3.connect(tmp_path / "t.db")
    plan = " ".join(
        str(row[3])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT SUM(cost_usd) FROM spend_ledger "
            "WHERE installation_id = ? AND created_at >= ? AND created_at < ?",
            (42, "2031-05-06 00:00:00", "2031-05-07 00:00:00"),
        )
    )
    assert "idx_spend_ledger_installation_created" in plan


def test_retention_purge_removes_old_ledger_rows_with_old_executions(db_backend: DbBackend) -> None:
    store = TelemetryStore(db_backend.target("telemetry"))
    try:
        now = datetime.now(UTC)
        store.record_spend(entry(now - timedelta(days=100), 1.0))
        store.record_spend(entry(now, 2.0))
        store.purge_older_than(90)
        assert store.spend_between(42, "acme/repo", now - timedelta(days=200), now + timedelta(days=1)) == (
            2.0,
            2.0,
        )
    finally:
        store.close()
