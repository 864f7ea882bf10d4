"""`kodiai jobs list|retry`: see and recover what the job journal holds (the dead-letter state above all).

The jobs database is the one ``kodiai serve`` uses: ``--db`` (a file or a ``postgresql://`` URL), else
``DATABASE_URL``, else ``JOBS_DB_PATH`` from the environment or the ``--env-file`` (default ``.env``), else
``./data/kodiai-jobs.db``. Both commands work beside a running server; a retried delivery is picked up by it
within seconds, or at its next start (on PostgreSQL its job is queued at once, under its installation's
lock, for any worker).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from kodiai.jobs.journal_admin import DeliveryRow
    from kodiai.jobs.pg_journal import PgJobJournal

app = typer.Typer(help="List and retry webhook deliveries in the job journal.", no_args_is_help=True)

DbOpt = Annotated[
    str | None,
    typer.Option("--db", help="Jobs DB file or postgresql:// URL (default: DATABASE_URL, else JOBS_DB_PATH)."),
]
EnvFileOpt = Annotated[Path, typer.Option("--env-file", help="Dotenv file read for DATABASE_URL/JOBS_DB_PATH.")]


def _fail(message: str) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(1)


def _db_path(db: str | None, env_file: Path) -> Path | str:
    """The SQLite file, or the ``postgresql://`` URL (a ``str``) of the jobs database."""
    from kodiai.storage.database import is_postgres_url

    if db:
        return db if is_postgres_url(db) else Path(db)
    from kodiai.settings import Settings, SettingsError

    try:
        settings = Settings.load(env_file=env_file, require_github_app=False)
    except SettingsError as exc:
        raise _fail(f"Settings are invalid: {exc}") from None
    return settings.database() or Path(settings.jobs_db_path)


def _pg(url: str) -> PgJobJournal:
    from kodiai.jobs.pg_journal import PgJobJournal

    try:
        return PgJobJournal(url, max_size=1)
    except ConnectionError as exc:
        raise _fail(f"No jobs database: {exc}") from None


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise _fail(f"No jobs database at {path} (set --db or JOBS_DB_PATH)")
    return path


@app.command("list")
def list_cmd(
    state: Annotated[
        list[str] | None,
        typer.Option(
            "--state",
            help="pending, running, requeued, dead, done, failed (repeatable; default: all but done).",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many rows, newest first.")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    db: DbOpt = None,
    env_file: EnvFileOpt = Path(".env"),
) -> None:
    """List journaled deliveries (a dead one shows its last error: retry it with `kodiai jobs retry`)."""
    from kodiai.jobs.journal_admin import DEFAULT_STATES, STATES, list_deliveries
    from kodiai.storage.connection import connect

    states = tuple(state) if state else DEFAULT_STATES
    unknown = [s for s in states if s not in STATES]
    if unknown:
        raise _fail(f"Unknown state {', '.join(unknown)}; expected one of {', '.join(STATES)}")
    target = _db_path(db, env_file)
    if isinstance(target, str):
        import psycopg

        journal = _pg(target)
        try:
            rows = journal.list_deliveries(states, limit=limit)
        except psycopg.Error as exc:
            raise _fail(f"Listing failed: {exc}") from None
        finally:
            journal.close()
    else:
        conn = connect(_existing(target), read_only=True)
        try:
            rows = list_deliveries(conn, states, limit=limit)
        finally:
            conn.close()
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    _print_table(rows)


def _print_table(rows: list[DeliveryRow]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160, soft_wrap=False, highlight=False)
    if not rows:
        console.print("No deliveries in those states.")
        return
    table = Table("Delivery", "Event", "Inst", "Status", "Att", "Received", "Error")
    for r in rows:
        event = r["event_name"] + (f".{r['action']}" if r["action"] else "")
        error = (r["error"] or "").replace("\n", " ")
        table.add_row(
            r["delivery_id"],
            event,
            str(r["installation_id"]),
            r["status"],
            str(r["attempts"]),
            str(r["received_at"])[:19],
            error[:70] + ("…" if len(error) > 70 else ""),
        )
    console.print(table)


@app.command("retry")
def retry_cmd(
    delivery_ids: Annotated[list[str] | None, typer.Argument(help="Dead deliveries to run again.")] = None,
    all_dead: Annotated[bool, typer.Option("--all-dead", help="Every dead delivery.")] = False,
    db: DbOpt = None,
    env_file: EnvFileOpt = Path(".env"),
) -> None:
    """Put dead deliveries back in the queue (attempts reset); a running server picks them up in seconds."""
    import sqlite3

    from kodiai.jobs.journal_admin import retry
    from kodiai.storage.connection import connect

    if bool(delivery_ids) == all_dead:
        raise _fail("Name one or more delivery ids, or pass --all-dead")
    target = _db_path(db, env_file)
    if isinstance(target, str):
        import psycopg

        journal = _pg(target)
        try:
            result = journal.retry(list(delivery_ids or []), all_dead=all_dead)
        except psycopg.Error as exc:
            raise _fail(f"Retry failed (nothing changed): {exc}") from None
        finally:
            journal.close()
    else:
        conn = connect(_existing(target))
        try:
            result = retry(conn, list(delivery_ids or []), all_dead=all_dead)
        except sqlite3.Error as exc:
            raise _fail(f"Retry failed (nothing changed): {exc}") from None
        finally:
            conn.close()
    for delivery in result.requeued:
        typer.echo(f"requeued {delivery}")
    for delivery, reason in result.refused.items():
        typer.echo(f"not retried {delivery}: {reason}", err=True)
    if not result.requeued and not result.refused:
        typer.echo("No dead deliveries.")
    if result.refused:
        raise typer.Exit(1)
