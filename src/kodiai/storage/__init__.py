"""SQLite stores: one connection helper, additive yoyo migrations, the telemetry and knowledge stores."""

from kodiai.storage.connection import connect
from kodiai.storage.migrations import MIGRATIONS_DIR, apply_migrations, migration_status
from kodiai.storage.telemetry import ExecutionRecord, RetrievalQualityRecord, TelemetryStore

__all__ = [
    "MIGRATIONS_DIR",
    "ExecutionRecord",
    "RetrievalQualityRecord",
    "TelemetryStore",
    "apply_migrations",
    "connect",
    "migration_status",
]
