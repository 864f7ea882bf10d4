"""Telemetry store: one row per executed Claude run (``executions``) and per retrieval
(``retrieval_quality``), in the original's tables so operators' SQL keeps working.

The store opens a SQLite file, or the PostgreSQL database when given a ``postgresql://`` URL
(``DATABASE_URL``; see :mod:`kodiai.storage.database`), with the same tables and the same SQL. It applies
the ``telemetry`` migrations when it opens, and on SQLite runs a PASSIVE WAL checkpoint every
:data:`CHECKPOINT_EVERY` writes (both kinds count) and on demand. Writes raise on failure; callers on a
review path wrap them fail-open as the original's handlers do.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from kodiai.storage.coerce import as_record
from kodiai.storage.database import Database, Executor
from kodiai.storage.opening import open_migrated
from kodiai.storage.rollups import RUNS, Sealer, rebuild_days_until, seal_telemetry
from kodiai.storage.write_health import WriteHealth, database_directory, reports_writes

CHECKPOINT_EVERY = 1000


class ExecutionRecord(BaseModel):
    """One ``executions`` row. Missing optionals take the original's defaults."""

    model_config = ConfigDict(extra="allow")

    delivery_id: str | None = None
    repo: str
    pr_number: int | None = None
    event_type: str
    provider: str = "anthropic"
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    duration_ms: int = 0
    cost_usd: float = 0.0
    conclusion: str
    session_id: str | None = None
    num_turns: int | None = None
    stop_reason: str | None = None


class RetrievalQualityRecord(BaseModel):
    """One ``retrieval_quality`` row.

    Extra keyword fields are accepted for columns that later additive migrations add (e.g. confidence
    counts); only the columns the table actually has are written.
    """

    model_config = ConfigDict(extra="allow")

    delivery_id: str | None = None
    repo: str
    pr_number: int | None = None
    event_type: str
    top_k: int | None = None
    distance_threshold: float | None = None
    result_count: int
    avg_distance: float | None = None
    language_match_ratio: float | None = None
    threshold_method: str | None = None


class SpendEntry(BaseModel):
    """One ``spend_ledger`` row: a run and its cost, or a refusal by the daily spend cap (cost 0).

    ``created_at`` is the handler's clock (UTC), so the day a row counts for is the day the cap checks.
    """

    created_at: datetime
    installation_id: int
    repo: str
    number: int | None = None
    delivery_id: str | None = None
    kind: str
    outcome: str
    reason: str | None = None
    cost_usd: float = 0.0


def sqlite_utc(moment: datetime) -> str:
    """``YYYY-MM-DD HH:MM:SS`` in UTC, the text form of SQLite's ``datetime('now')``."""
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%d %H:%M:%S")


def table_columns(db: Executor, table: str) -> list[str]:
    """Column names of ``table`` in declaration order."""
    return [name for name, _ in db.columns(table)]


def _insert_sql(
    table: str, values: dict[str, Any], columns: list[str], conflict: str = ""
) -> tuple[str, list[Any]]:
    present = [c for c in values if c in columns and c not in ("id", "created_at")]
    names = ", ".join(f'"{c}"' for c in present)
    marks = ", ".join("?" for _ in present)
    return f'INSERT INTO "{table}" ({names}) VALUES ({marks}){conflict}', [values[c] for c in present]


class TelemetryStore:
    """The telemetry database. Construct once in the composition root and pass it in."""

    def __init__(self, path: str | Path) -> None:
        """``path``: a SQLite file (created if missing) or ``:memory:``, or a ``postgresql://`` URL."""
        db = open_migrated(path, "telemetry")
        try:
            self._columns = {t: table_columns(db, t) for t in ("executions", "retrieval_quality")}
        except BaseException:
            db.close()
            raise
        self._db: Database = db
        self.path = str(path) if db.dialect == "sqlite" else db.describe()
        """The SQLite file, or ``postgresql://host:port/db`` (no credentials)."""
        self.dialect = db.dialect
        probe_dir = database_directory(path) if db.dialect == "sqlite" else None
        self.write_health = WriteHealth("telemetry", probe_dir)
        """Whether writes land (``/readiness``); every write method below reports to it."""
        self._writes_since_checkpoint = 0
        self._sealer = Sealer(db, seal_telemetry, "telemetry")
        """Folds past days into the dashboard's rollups on the first write of each day."""
        self.auto_checkpoints = 0
        """How many automatic checkpoints ran since the store opened."""

    @property
    def writes_since_checkpoint(self) -> int:
        return self._writes_since_checkpoint

    def columns(self, table: str) -> list[str]:
        """Columns the open table has (fixed at open; migrations run only then)."""
        return list(self._columns[table])

    def _count_write(self) -> None:
        self._writes_since_checkpoint += 1
        if self._writes_since_checkpoint >= CHECKPOINT_EVERY:
            self._db.checkpoint()
            self._writes_since_checkpoint = 0
            self.auto_checkpoints += 1

    @reports_writes
    def record(self, entry: ExecutionRecord | BaseModel | Mapping[str, Any]) -> None:
        """Insert one ``executions`` row (a redelivery that runs again adds another row)."""
        values = as_record(ExecutionRecord, entry).model_dump()
        sql, params = _insert_sql("executions", values, self._columns["executions"])
        with self._db.lock:
            self._db.execute(sql, tuple(params))
            self._count_write()
        self._sealer.after_write()

    @reports_writes
    def record_retrieval_quality(self, entry: RetrievalQualityRecord | BaseModel | Mapping[str, Any]) -> bool:
        """Insert-or-ignore one ``retrieval_quality`` row; ``False`` when the delivery id was already there.

        ``entry`` may be a :class:`RetrievalQualityRecord`, another pydantic model with the same field names
        (e.g. ``kodiai.learning.telemetry.RetrievalQualityRow``) or a mapping; it is validated first, so a
        row missing ``repo``/``event_type``/``result_count`` raises ``pydantic.ValidationError``.
        """
        values = as_record(RetrievalQualityRecord, entry).model_dump()
        sql, params = _insert_sql(
            "retrieval_quality", values, self._columns["retrieval_quality"], " ON CONFLICT DO NOTHING"
        )
        with self._db.lock:
            cur = self._db.execute(sql, tuple(params))
            self._count_write()
        self._sealer.after_write()
        return cur.rowcount > 0

    @reports_writes
    def record_spend(self, entry: SpendEntry) -> None:
        """Insert one ``spend_ledger`` row (the daily spend cap's record; see :mod:`kodiai.spend_cap.policy`)."""
        values = entry.model_dump()
        values["created_at"] = sqlite_utc(entry.created_at)
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        with self._db.lock:
            self._db.execute(f"INSERT INTO spend_ledger ({names}) VALUES ({marks})", tuple(values.values()))
            self._count_write()

    def spend_between(
        self, installation_id: int, repo: str, start: datetime, end: datetime
    ) -> tuple[float, float]:
        """``(installation's spend, repo's spend)`` in USD recorded in ``[start, end)``: one indexed query."""
        row = self._db.fetch_one(
            "SELECT COALESCE(SUM(cost_usd), 0), COALESCE(SUM(CASE WHEN repo = ? THEN cost_usd END), 0) "
            "FROM spend_ledger WHERE installation_id = ? AND created_at >= ? AND created_at < ?",
            (repo, installation_id, sqlite_utc(start), sqlite_utc(end)),
        )
        return (float(row[0]), float(row[1])) if row else (0.0, 0.0)

    @reports_writes
    def purge_older_than(self, days: int) -> int:
        """Delete ``executions`` (and ``spend_ledger``) rows created strictly before now − ``days``;
        ``retrieval_quality`` is kept. Returns the ``executions`` rows deleted."""
        if days < 0:
            raise ValueError(f"days must be >= 0, got {days}")
        row = self._db.fetch_one("SELECT datetime('now', ?)", (f"-{int(days)} days",))
        cutoff = str(row[0]) if row else ""
        with self._db.transaction() as tx:  # the dashboard's rollup of the deleted days goes with them
            deleted = int(tx.execute("DELETE FROM executions WHERE created_at < ?", (cutoff,)).rowcount)
            tx.execute("DELETE FROM spend_ledger WHERE created_at < ?", (cutoff,))
            rebuild_days_until(tx, RUNS, cutoff[:10])
        return deleted

    def checkpoint(self) -> tuple[int, int, int]:
        """PASSIVE WAL checkpoint now; SQLite's (busy, log frames, checkpointed frames); (0, 0, 0) on
        PostgreSQL."""
        return self._db.checkpoint()

    def journal_mode(self) -> str:
        """SQLite's journal mode (``wal``); empty on PostgreSQL."""
        if self._db.dialect != "sqlite":
            return ""
        row = self._db.fetch_one("PRAGMA journal_mode")
        return str(row[0]) if row else ""

    def close(self) -> None:
        """Close the connection; never raises. Any later call raises ``sqlite3.ProgrammingError``."""
        self.write_health.close()
        self._db.close()
