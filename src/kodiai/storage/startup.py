"""The storage steps of the start-up sequence (behaviour P1.2 steps 6, 7 and 11), for the
composition root. Log messages are the original's, which runbooks grep for.

- Step 6: open the telemetry store (not wrapped: a failure stops start-up), purge ``executions`` older
  than 90 days, log "Telemetry retention purge complete" with ``purgedCount`` when > 0, PASSIVE checkpoint.
- Step 7: resolve the knowledge path, open the store (not wrapped), log "Knowledge store path resolved"
  with ``knowledgeDbPath`` and ``source``, PASSIVE checkpoint.
- Step 11: purge old run state (30 days) fail-open: warn "Run state purge failed (non-fatal)"; log
  "Run state retention purge complete" with ``runsPurged`` when > 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kodiai.log import Logger
from kodiai.storage.db_path import resolve_knowledge_db_path
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.telemetry import TelemetryStore

TELEMETRY_RETENTION_DAYS = 90
RUN_STATE_RETENTION_DAYS = 30


def open_telemetry_store(path: str | Path, log: Logger) -> TelemetryStore:
    """P1.2 step 6: ``path`` is the SQLite file, or ``DATABASE_URL``. Errors propagate (fail-fast, as the
    original)."""
    store = TelemetryStore(path)
    if store.dialect != "sqlite":
        log.info("Telemetry store on PostgreSQL", database=store.path)  # host and database, no credentials
    purged = store.purge_older_than(TELEMETRY_RETENTION_DAYS)
    if purged > 0:
        log.info("Telemetry retention purge complete", purgedCount=purged)
    store.checkpoint()
    return store


def open_knowledge_store(
    arg: str | None, env: Mapping[str, str], log: Logger, cwd: str | Path | None = None
) -> KnowledgeStore:
    """P1.2 step 7: ``arg`` > ``KNOWLEDGE_DB_PATH`` in ``env`` > default. Errors propagate (fail-fast)."""
    path, source = resolve_knowledge_db_path(arg, env, cwd)
    store = KnowledgeStore(path)
    log.info("Knowledge store path resolved", knowledgeDbPath=path, source=source)
    store.checkpoint()
    return store


def open_knowledge_store_in(database_url: str, log: Logger) -> KnowledgeStore:
    """P1.2 step 7 with ``DATABASE_URL``: the knowledge tables in PostgreSQL (``KNOWLEDGE_DB_PATH`` unused)."""
    store = KnowledgeStore(database_url)
    log.info("Knowledge store path resolved", knowledgeDbPath=store.path, source="database_url")
    return store


def purge_run_state(store: KnowledgeStore, log: Logger) -> int:
    """P1.2 step 11, fail-open: any error is a warning and 0 rows."""
    try:
        purged = store.purge_old_runs(RUN_STATE_RETENTION_DAYS)
    except Exception as exc:
        log.warning("Run state purge failed (non-fatal)", error=f"{type(exc).__name__}: {exc}")
        return 0
    if purged > 0:
        log.info("Run state retention purge complete", runsPurged=purged)
    return purged
