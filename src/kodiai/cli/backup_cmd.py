"""`kodiai backup create|verify|restore`: a consistent copy of every store, made while the server runs.

The stores are the ones ``kodiai serve`` uses: ``TELEMETRY_DB_PATH``, ``KNOWLEDGE_DB_PATH``,
``JOBS_DB_PATH`` and ``LEARNING_MEMORY_URI`` from the environment or the ``--env-file`` (default ``.env``),
each overridable by an option. See docs/operations.md, "Backup and restore".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from kodiai.maintenance.backup import StorePaths

app = typer.Typer(help="Back up and restore the databases and the learned memory.", no_args_is_help=True)

EnvFileOpt = Annotated[Path, typer.Option("--env-file", help="Dotenv file read for the store paths.")]
TelemetryOpt = Annotated[
    str | None, typer.Option("--telemetry", help="Telemetry DB (env TELEMETRY_DB_PATH).")
]
KnowledgeOpt = Annotated[
    str | None, typer.Option("--knowledge", help="Knowledge DB (env KNOWLEDGE_DB_PATH).")
]
JobsOpt = Annotated[str | None, typer.Option("--jobs", help="Jobs DB (env JOBS_DB_PATH).")]
MemoryOpt = Annotated[
    str | None, typer.Option("--memory", help="Learned-memory directory (env LEARNING_MEMORY_URI).")
]


def _fail(message: str) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(1)


def _paths(
    env_file: Path, telemetry: str | None, knowledge: str | None, jobs: str | None, memory: str | None
) -> StorePaths:
    from kodiai.maintenance.backup import StorePaths
    from kodiai.settings import Settings, SettingsError
    from kodiai.storage.db_path import resolve_knowledge_db_path

    try:
        settings = Settings.load(env_file=env_file, require_github_app=False)
    except SettingsError as exc:
        raise _fail(f"Settings are invalid: {exc}") from None
    env = {"KNOWLEDGE_DB_PATH": settings.knowledge_db_path or ""}
    return StorePaths(
        telemetry=Path(telemetry or settings.telemetry_db_path),
        knowledge=Path(resolve_knowledge_db_path(knowledge, env)[0]),
        jobs=Path(jobs or settings.jobs_db_path),
        memory=memory or settings.learning_memory_uri,
    )


@app.command()
def create(
    dest: Annotated[Path, typer.Argument(help="New directory for the backup (must not exist or be empty).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the manifest as JSON.")] = False,
    env_file: EnvFileOpt = Path(".env"),
    telemetry: TelemetryOpt = None,
    knowledge: KnowledgeOpt = None,
    jobs: JobsOpt = None,
    memory: MemoryOpt = None,
) -> None:
    """Back up the three databases and the learned memory into DEST (safe while the server runs)."""
    from kodiai.cli.main import package_version
    from kodiai.maintenance.backup import BackupError, create_backup
    from kodiai.maintenance.backup_lance import LanceCopyError

    paths = _paths(env_file, telemetry, knowledge, jobs, memory)
    try:
        manifest = create_backup(paths, dest, kodiai_version=package_version())
    except (BackupError, LanceCopyError, OSError) as exc:
        raise _fail(f"Backup failed: {exc}") from None
    if as_json:
        typer.echo(json.dumps(manifest.model_dump(), indent=2))
        return
    for name, entry in manifest.databases.items():
        rows = sum(entry.tables.values())
        typer.echo(
            f"{name}: {entry.source} ({entry.bytes} bytes, {rows} rows, {len(entry.migrations)} migrations)"
        )
    if manifest.memory is not None:
        for table, info in manifest.memory.tables.items():
            models = ", ".join(f"{m} {n}" for m, n in info["models"].items()) or "no live rows"
            typer.echo(
                f"memory {table}: version {info['version']}, {info['rows']} rows ({info['live_rows']} live: "
                f"{models})"
            )
    for name, reason in manifest.skipped.items():
        typer.echo(f"{name}: skipped ({reason})")
    typer.echo(f"Backup written to {dest}")


@app.command()
def verify(src: Annotated[Path, typer.Argument(help="A backup directory.")]) -> None:
    """Check a backup against its manifest (checksums, readable databases and memory tables)."""
    from kodiai.maintenance.backup import BackupError, verify_backup

    try:
        manifest, problems = verify_backup(src)
    except BackupError as exc:
        raise _fail(str(exc)) from None
    for problem in problems:
        typer.echo(problem, err=True)
    if problems:
        raise typer.Exit(1)
    stores = [*manifest.databases, *(["memory"] if manifest.memory else [])]
    typer.echo(f"OK: {', '.join(stores)} from Kodiai {manifest.kodiai_version}, made {manifest.created_at}")


@app.command()
def restore(
    src: Annotated[Path, typer.Argument(help="A backup directory made by `kodiai backup create`.")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace stores that hold data (moved aside, not deleted).")
    ] = False,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only", help="Restore only this store: telemetry, knowledge, jobs or memory (repeatable)."
        ),
    ] = None,
    env_file: EnvFileOpt = Path(".env"),
    telemetry: TelemetryOpt = None,
    knowledge: KnowledgeOpt = None,
    jobs: JobsOpt = None,
    memory: MemoryOpt = None,
) -> None:
    """Restore a backup into the configured stores. Stop the server first."""
    from kodiai.maintenance.backup import BackupError, restore_backup
    from kodiai.storage.migrations import MigrationError, load_migrations

    def known(name: str) -> list[str]:
        try:
            return [m.id for m in load_migrations(name)]
        except MigrationError:
            return []

    paths = _paths(env_file, telemetry, knowledge, jobs, memory)
    try:
        report = restore_backup(src, paths, force=force, only=set(only or ()), known_migrations=known)
    except (BackupError, OSError) as exc:
        raise _fail(f"Restore failed: {exc}") from None
    for line in report.restored:
        typer.echo(f"restored {line}")
    for line in report.moved_aside:
        typer.echo(f"moved aside {line}")
    for line in report.notes:
        typer.echo(line)
    typer.echo("Start the server (it applies any pending migrations).")
