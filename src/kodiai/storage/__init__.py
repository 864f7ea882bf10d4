"""SQLite stores: one connection helper, additive yoyo migrations, the telemetry and knowledge stores."""

from kodiai.storage.connection import connect
from kodiai.storage.db_path import resolve_knowledge_db_path
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.migrations import MIGRATIONS_DIR, apply_migrations, migration_status
from kodiai.storage.telemetry import ExecutionRecord, RetrievalQualityRecord, TelemetryStore

__all__ = [
    "MIGRATIONS_DIR",
    "ExecutionRecord",
    "KnowledgeStore",
    "RetrievalQualityRecord",
    "TelemetryStore",
    "apply_migrations",
    "connect",
    "migration_status",
    "resolve_knowledge_db_path",
]
