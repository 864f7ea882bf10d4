"""Compaction of a learned memory written by several processes: one periodic job, never the writers.

Each write of a multi-writer store is one small commit (one fragment, one table version). One job folds the
fragments together and the new rows into the indexes, and deletes old table versions — only those older than
:data:`KEEP_VERSIONS`, never all of them (``cleanup_older_than=0``): another process may be in the middle of
reading one, and deleting its files under it fails that read. On PostgreSQL deployments this runs as a
periodic task on one worker at a time; a single process on a local directory keeps compacting as it writes.
"""

from __future__ import annotations

import time
from datetime import timedelta

from kodiai.learning.memory_store import MIN_KEEP_VERSIONS, LanceMemoryStore
from kodiai.log import get_logger

KEEP_VERSIONS = timedelta(hours=6)
"""Table versions younger than this survive compaction (a reader's version lives seconds; margin for
clock skew between hosts and slow object-store listings)."""

assert KEEP_VERSIONS >= MIN_KEEP_VERSIONS


ATTEMPTS = 3


def compact_memory(store: LanceMemoryStore) -> None:
    """Compact ``store`` once (fragments, index upkeep, versions older than :data:`KEEP_VERSIONS`).

    A compaction that rewrote rows a concurrent retirement or stale-marking changed loses LanceDB's commit
    race and fails (LanceDB does not retry a compaction); it is planned again on the newest version, up to
    :data:`ATTEMPTS` times. New memories written meanwhile do not conflict with it."""
    log = get_logger("kodiai.learning")
    started = time.monotonic()
    for attempt in range(1, ATTEMPTS + 1):
        try:
            store.compact(KEEP_VERSIONS)
            break
        except Exception as exc:
            if attempt == ATTEMPTS:
                raise
            log.info("Learning memory compaction retried", attempt=attempt, err=type(exc).__name__)
            time.sleep(0.5 * attempt)
    log.info("Learning memory compacted", seconds=round(time.monotonic() - started, 2))
