"""The databases the dashboard reads: its own read-only connections beside the stores' (SQLite files
opened read-only; on PostgreSQL a pool of its own), so a slow page never holds a store's lock."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kodiai.storage.database import Database, SqliteDatabase, is_postgres_url
from kodiai.storage.opening import open_postgres


@dataclass
class Sources:
    telemetry: Database
    knowledge: Database
    jobs: Database | None = None

    def close(self) -> None:
        for db in {id(d): d for d in (self.telemetry, self.knowledge, self.jobs) if d is not None}.values():
            if not db.closed:
                db.close()


def open_read_only(target: str | Path, name: str) -> Database:
    """``target``: a SQLite file (opened read-only: the dashboard cannot write through it) or the
    ``postgresql://`` URL every store shares."""
    text = str(target)
    if is_postgres_url(text):
        return open_postgres(text, f"dashboard-{name}")
    return SqliteDatabase.open(text, read_only=True)


def open_sources(telemetry: str, knowledge: str, jobs: str | None) -> Sources:
    if is_postgres_url(telemetry):  # one database holds every store: one small pool of the dashboard's own
        shared = open_read_only(telemetry, "stores")
        return Sources(shared, shared, shared)
    opened: list[Database] = []
    try:
        for target, name in ((telemetry, "telemetry"), (knowledge, "knowledge")):
            opened.append(open_read_only(target, name))
        jobs_db = None
        if jobs is not None and (is_postgres_url(jobs) or Path(jobs).exists()):
            jobs_db = open_read_only(jobs, "jobs")
        return Sources(opened[0], opened[1], jobs_db)
    except BaseException:
        for db in opened:
            db.close()
        raise
