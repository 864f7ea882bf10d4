"""`kodiai db upgrade|status`: apply and inspect the additive migrations of each SQLite database, or of the
PostgreSQL database ``DATABASE_URL`` names (shown by host and name only): telemetry, knowledge and the jobs
database's mention state so far; the job journal stays in the jobs file, which is migrated too.

`kodiai db migrate-to-postgres`: copy a SQLite deployment's rows into that PostgreSQL database
(:mod:`kodiai.maintenance.migrate_to_postgres`), once, when moving to replicas."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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

if TYPE_CHECKING:
    from kodiai.settings import Settings

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
    if (MIGRATIONS_DIR / "jobs").is_dir():  # the journal, dedup and mention state: PostgreSQL's or the file
        targets.append(("jobs", database_url or env.get("JOBS_DB_PATH", "").strip() or DEFAULT_JOBS_DB_PATH))
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
        if postgres and name == "jobs":
            failed = not _queue_schema(target, path) or failed
    if failed:
        raise typer.Exit(1)


def _queue_schema(url: str, path: str) -> bool:
    """The queue's tables (procrastinate's own schema, applied by its applier) beside the jobs tables, so a
    deployment can migrate before any replica starts; False when that failed (reported)."""
    from kodiai.jobs.pg_schema import ensure_procrastinate_schema
    from kodiai.maintenance.migrate_to_postgres import redact

    try:
        applied = ensure_procrastinate_schema(url)
    except Exception as exc:  # psycopg's and procrastinate's errors name host and database, never the password
        typer.echo(f"queue ({path}): FAILED: {type(exc).__name__}: {redact(str(exc), url)}", err=True)
        return False
    typer.echo(f"queue ({path}): {'applied procrastinate schema' if applied else 'up to date'}")
    return True


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


EnvFileOpt = Annotated[
    Path, typer.Option("--env-file", help="Dotenv file read for DATABASE_URL and the paths.")
]


@app.command("migrate-to-postgres")
def migrate_to_postgres(
    telemetry: TelemetryOpt = None,
    knowledge: KnowledgeOpt = None,
    jobs: JobsOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace rows PostgreSQL already has in a store's tables.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check the files and count rows on both sides; write nothing.")
    ] = False,
    env_file: EnvFileOpt = Path(".env"),
) -> None:
    """Copy the SQLite files' rows into the PostgreSQL database of DATABASE_URL (stop the servers first).

    With no path option every store is copied (TELEMETRY_DB_PATH, KNOWLEDGE_DB_PATH, JOBS_DB_PATH or their
    defaults); naming one or more copies only those. Each store is one transaction; a table that already has
    rows in PostgreSQL is refused unless --force."""
    from kodiai.maintenance.migrate_to_postgres import MigrateError, migrate
    from kodiai.settings import Settings, SettingsError

    try:
        settings = Settings.load(env_file=env_file, require_github_app=False)
    except SettingsError as exc:
        typer.echo(f"Settings are invalid: {exc}", err=True)
        raise typer.Exit(1) from None
    url = settings.database()
    if not url:
        typer.echo("DATABASE_URL is not set: set it to the PostgreSQL database to copy into.", err=True)
        raise typer.Exit(1)
    sources = _sources(settings, telemetry, knowledge, jobs)
    missing = [f"{store}: no SQLite file at {path}" for store, path in sources.items() if not path.is_file()]
    if missing:
        typer.echo(
            "\n".join(missing)
            + "\nName the files to copy with --telemetry/--knowledge/--jobs (only those are "
            "copied); nothing was written.",
            err=True,
        )
        raise typer.Exit(1)
    target = settings.database_description()
    typer.echo(f"{'Dry run: ' if dry_run else ''}SQLite → {target}")
    try:
        report = migrate(url, sources, force=force, dry_run=dry_run)
    except MigrateError as exc:
        typer.echo(f"FAILED: {exc}", err=True)
        raise typer.Exit(1) from None
    if report.applied_migrations:
        typer.echo(f"PostgreSQL migrations applied: {', '.join(report.applied_migrations)}")
    table = Table(title=f"Rows per table ({'dry run' if dry_run else 'copied and counted on both sides'})")
    for col in ("Store", "Table", "SQLite rows", "PostgreSQL rows", "Result"):
        table.add_column(col)
    for r in report.results:
        table.add_row(
            r.store,
            r.table,
            "-" if r.sqlite_rows < 0 else str(r.sqlite_rows),
            "-" if r.postgres_rows is None else str(r.postgres_rows),
            r.status,
        )
    Console(width=160, soft_wrap=False, highlight=False).print(table)
    for note in report.notes:
        typer.echo(f"note: {note}")
    refused = [r for r in report.results if r.status.startswith("refused")]
    if dry_run:
        typer.echo(
            "dry run: nothing written" + (f"; {len(refused)} table(s) would be refused" if refused else "")
        )
        return
    typer.echo(
        f"done: {sum(1 for r in report.results if not r.status.startswith('skipped'))} tables, row counts equal"
    )


def _sources(
    settings: Settings, telemetry: str | None, knowledge: str | None, jobs: str | None
) -> dict[str, Path]:
    """The SQLite file of each store to copy: the ones named, or all three from the settings."""
    named = {n: p for n, p in (("telemetry", telemetry), ("knowledge", knowledge), ("jobs", jobs)) if p}
    if named:
        return {
            n: Path(resolve_knowledge_db_path(p, {})[0] if n == "knowledge" else p) for n, p in named.items()
        }
    return {
        "telemetry": Path(settings.telemetry_db_path),
        "knowledge": Path(settings.knowledge_db().path),
        "jobs": Path(settings.jobs_db_path),
    }
