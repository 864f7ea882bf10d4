"""procrastinate's schema on PostgreSQL, applied once, and the trigger that wakes a worker when a lock frees.

Its own module so the journal (:mod:`kodiai.jobs.pg_journal`, which applies it at open) and the worker
(:mod:`kodiai.jobs.pg_queue`, which imports the journal) import it one way, without a circle.
"""

from __future__ import annotations

from typing import Any

import psycopg
from procrastinate import App, SyncPsycopgConnector

from kodiai.log import get_logger
from kodiai.storage.database import safe_url

_SCHEMA_LOCK = "kodiai:procrastinate-schema"


def procrastinate_schema_present(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()
    return bool(row and row[0])


def ensure_procrastinate_schema(url: str) -> bool:
    """Apply procrastinate's schema with its own applier unless ``procrastinate_jobs`` exists already (one
    process at a time: a session advisory lock), then make sure the lock-release wake-up exists (see
    :data:`WAKE_ON_LOCK_RELEASE`). Returns whether the schema was applied. Upgrading procrastinate later needs
    its migrations (docs/operations.md, "Jobs on PostgreSQL")."""
    with psycopg.connect(url, autocommit=True) as conn:
        if procrastinate_schema_present(conn) and _wake_present(conn):
            return False
        conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (_SCHEMA_LOCK,))
        try:
            applied = False
            if not procrastinate_schema_present(conn):
                app = App(connector=SyncPsycopgConnector(conninfo=url, min_size=1, max_size=1))
                with app.open():
                    app.schema_manager.apply_schema()
                get_logger("kodiai.jobs").info("procrastinate schema applied", database=_safe(url))
                applied = True
            if not _wake_present(conn):
                conn.execute(WAKE_ON_LOCK_RELEASE)
            return applied
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (_SCHEMA_LOCK,))


_WAKE_TRIGGER = "kodiai_wake_on_lock_release"

#: procrastinate wakes its workers (LISTEN/NOTIFY) when a job is *inserted*, not when a running job of a lock
#: ends. A worker whose queued jobs all wait on busy installations then sleeps until its next poll
#: (``WORKER_POLL_SECONDS``) after the lock is free, so one installation's burst drained one job per poll.
#: This trigger sends procrastinate's own "job inserted" notice when a locked job leaves ``doing``
#: (finished: deleted or updated), so the next job of that installation starts at once.
WAKE_ON_LOCK_RELEASE = f"""
CREATE OR REPLACE FUNCTION {_WAKE_TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload TEXT;
BEGIN
    SELECT json_build_object('type', 'job_inserted', 'job_id', OLD.id)::text INTO payload;
    PERFORM pg_notify('procrastinate_queue_v1#' || OLD.queue_name, payload);
    PERFORM pg_notify('procrastinate_any_queue_v1', payload);
    RETURN NULL;
END;
$$;
DROP TRIGGER IF EXISTS {_WAKE_TRIGGER}_update ON procrastinate_jobs;
CREATE TRIGGER {_WAKE_TRIGGER}_update AFTER UPDATE OF status ON procrastinate_jobs FOR EACH ROW
    WHEN (OLD.status = 'doing' AND NEW.status <> 'doing' AND OLD.lock IS NOT NULL)
    EXECUTE FUNCTION {_WAKE_TRIGGER}();
DROP TRIGGER IF EXISTS {_WAKE_TRIGGER}_delete ON procrastinate_jobs;
CREATE TRIGGER {_WAKE_TRIGGER}_delete AFTER DELETE ON procrastinate_jobs FOR EACH ROW
    WHEN (OLD.status = 'doing' AND OLD.lock IS NOT NULL)
    EXECUTE FUNCTION {_WAKE_TRIGGER}();
"""


def _wake_present(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        "SELECT COUNT(*) FROM pg_trigger WHERE tgname IN (%s, %s)",
        (f"{_WAKE_TRIGGER}_update", f"{_WAKE_TRIGGER}_delete"),
    ).fetchone()
    return bool(row and row[0] == 2)


def _safe(url: str) -> str:
    return safe_url(url)
