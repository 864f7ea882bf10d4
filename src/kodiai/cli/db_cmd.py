"""`kodiai db upgrade|status`: apply and inspect the additive migrations of each SQLite database, or of the
PostgreSQL database ``DATABASE_URL`` names (shown by host and name only): telemetry, knowledge and the jobs
database's mention state so far; the job journal stays in the jobs file, which is migrated too."""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from kodiai.storage.database import is_postgres_url, safe_url
from kodiai.storage.db_path import DEFAULT_TELEMETRY_DB_PATH, resolve_knowledge_db_path
from kodiai.storage.migrations import (
    MIGRATIONS_DIR,
    MigrationError,
    apply_migrations,
    apply_postgres_migrations,
    migration_status,
    postgres_migration_status,
)

POSTGRES_DATABASES = ("telemetry", "knowledge", "jobs")

app = typer.Typer(help="Apply and inspect database migrations (additive only).", no_args_is_help=True)

DEFAULT_JOBS_DB_PATH = "./data/kodiai-jobs.db"

TelemetryOpt = Annotated[
    str | None, typer.Option("--telemetry", help="Telemetry DB path (env TELEMETRY_DB_PATH).")
]
KnowledgeOpt = Annotated[
    str | None, typer.Option("--knowledge", help="Knowledge DB path (env KNOWLEDGE_DB_PATH).")
]
JobsOpt = Annotated[str | None, typer.Option("--jobs", help="Jobs/dedup DB path (env JOBS_DB_PATH).")]


def _targets(telemetry: str | None, knowledge: str | None, jobs: str | None) -> list[tuple[str, str]]:
    """(database name, path) pairs: the ones named on the command line, or every known database."""
    env = os.environ
    named = [(n, p) for n, p in (("telemetry", telemetry), ("knowledge", knowledge), ("jobs", jobs)) if p]
    if named:
        return [(n, resolve_knowledge_db_path(p, env)[0] if n == "knowledge" else p) for n, p in named]
    database_url = env.get("DATABASE_URL", "").strip()
    targets = [
        ("telemetry", database_url or env.get("TELEMETRY_DB_PATH", "").strip() or DEFAULT_TELEMETRY_DB_PATH),
        ("knowledge", database_url or resolve_knowledge_db_path(None, env)[0]),
    ]
    if (MIGRATIONS_DIR / "jobs").is_dir():
        targets.append(("jobs", env.get("JOBS_DB_PATH", "").strip() or DEFAULT_JOBS_DB_PATH))
        if database_url:  # the mention state's tables; the journal stays in the file for now
            targets.append(("jobs", database_url))
    return targets


@app.command()
def upgrade(telemetry: TelemetryOpt = None, knowledge: KnowledgeOpt = None, jobs: JobsOpt = None) -> None:
    """Apply pending migrations (creates missing files). With no option: every database at its configured path."""
    failed = False
    for name, target in _targets(telemetry, knowledge, jobs):
        postgres = is_postgres_url(target) and name in POSTGRES_DATABASES
        path = safe_url(target) if postgres else target
        try:
            applied = apply_postgres_migrations(target, name) if postgres else apply_migrations(target, name)
        except (MigrationError, sqlite3.Error, OSError) as exc:
            typer.echo(f"{name} ({path}): FAILED: {exc}", err=True)
            failed = True
            continue
        if applied:
            typer.echo(f"{name} ({path}): applied {len(applied)}: {', '.join(applied)}")
        else:
            typer.echo(f"{name} ({path}): up to date")
    if failed:
        raise typer.Exit(1)


@app.command()
def status(
    telemetry: TelemetryOpt = None,
    knowledge: KnowledgeOpt = None,
    jobs: JobsOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show applied and pending migrations per database (never creates or changes a file)."""
    rows: list[dict[str, object]] = []
    for name, target in _targets(telemetry, knowledge, jobs):
        postgres = is_postgres_url(target) and name in POSTGRES_DATABASES
        path = safe_url(target) if postgres else target
        try:
            states = postgres_migration_status(target, name) if postgres else migration_status(target, name)
        except (MigrationError, sqlite3.Error, OSError) as exc:
            typer.echo(f"{name} ({path}): {exc}", err=True)
            raise typer.Exit(1) from None
        rows += [
            {"database": name, "path": path, "id": s.id, "applied": s.applied, "applied_at": s.applied_at}
            for s in states
        ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="Kodiai database migrations")
    for col in ("Database", "Path", "Migration", "Status", "Applied at (UTC)"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            str(r["database"]),
            str(r["path"]),
            str(r["id"]),
            "applied" if r["applied"] else "[bold]pending[/bold]",
            str(r["applied_at"] or "-"),
        )
    Console(width=160, soft_wrap=False, highlight=False).print(table)
    pending = sum(1 for r in rows if not r["applied"])
    typer.echo(f"{pending} pending" if pending else "all applied")
