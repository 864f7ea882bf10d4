"""Backup and restore of every store: the three SQLite databases and the learned-memory LanceDB directory.

A backup is a directory: ``telemetry.db``, ``knowledge.db``, ``jobs.db`` (SQLite's online backup API: a
consistent snapshot taken inside one read transaction, while the server keeps writing), ``memory/`` (a
copy of the LanceDB directory at its latest version, :mod:`kodiai.maintenance.backup_lance`) and
``kodiai-backup.json``, the manifest: each file's checksum, applied migrations and row counts, each memory
table's version, row counts and embedding models. The backup is built in a hidden sibling directory and
renamed into place last, so a directory named like a backup is always complete.

A restore checks the backup against its manifest first, refuses to replace stores that hold data unless
forced (then it moves them aside, it never deletes them), copies each file in under a temporary name and
renames it into place, and writes the job journal's identity file for the restored journal.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from kodiai.maintenance import backup_lance

MANIFEST_NAME = "kodiai-backup.json"
FORMAT = "kodiai-backup/1"
DATABASES = ("telemetry", "knowledge", "jobs")
MEMORY_DIR = "memory"
COMPANIONS = ("-wal", "-shm", "-journal")


class BackupError(RuntimeError):
    """The backup cannot be made, or a backup is not fit to restore."""


class RestoreRefused(BackupError):
    """The targets hold data and ``force`` was not given."""

    def __init__(self, occupied: list[str]) -> None:
        self.occupied = occupied
        super().__init__(
            "refusing to overwrite stores that hold data: "
            + ", ".join(occupied)
            + " (stop the server; --force moves them aside as *.pre-restore-<time> and restores)"
        )


class DatabaseEntry(BaseModel):
    model_config = ConfigDict(extra="ignore")

    file: str
    source: str
    sha256: str
    bytes: int
    migrations: list[str]
    tables: dict[str, int]
    journal_instance: str | None = None


class MemoryEntry(BaseModel):
    model_config = ConfigDict(extra="ignore")

    dir: str
    source: str
    tables: dict[str, dict[str, Any]]


class BackupManifest(BaseModel):
    """``kodiai-backup.json``. Unknown fields (a newer Kodiai's) are ignored."""

    model_config = ConfigDict(extra="ignore")

    format: str
    kodiai_version: str
    created_at: str
    databases: dict[str, DatabaseEntry]
    memory: MemoryEntry | None = None
    skipped: dict[str, str] = {}
    """Stores not in the backup, with the reason (no file yet, object storage)."""


@dataclass(frozen=True)
class StorePaths:
    """Where each store lives (the server's settings, or command-line overrides)."""

    telemetry: Path
    knowledge: Path
    jobs: Path
    memory: str

    def database(self, name: str) -> Path:
        return {"telemetry": self.telemetry, "knowledge": self.knowledge, "jobs": self.jobs}[name]


@dataclass
class RestoreReport:
    restored: list[str] = field(default_factory=list)
    moved_aside: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ---- pure helpers -----------------------------------------------------------------------------------


def is_remote_uri(uri: str) -> bool:
    """An object-store URI (``s3://``, ``gs://``, ``az://``…): copied by the bucket's own tools."""
    return "://" in uri and not uri.startswith("file://")


def local_memory_path(uri: str) -> Path:
    return Path(uri.removeprefix("file://"))


def migration_notes(name: str, applied: list[str], known: list[str]) -> list[str]:
    """What an older or newer backup means for this version (migrations are additive only)."""
    notes = []
    newer = [m for m in applied if m not in known]
    pending = [m for m in known if m not in applied]
    if newer:
        notes.append(
            f"{name}: the backup has migrations this version does not know ({', '.join(newer)}): it was made "
            "by a newer Kodiai. This version runs on it (it ignores the added tables and columns)."
        )
    if pending:
        notes.append(
            f"{name}: {len(pending)} migration(s) newer than the backup are applied at the next start "
            "(or by `kodiai db upgrade`)."
        )
    return notes


# ---- SQLite -----------------------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def backup_sqlite(src: Path, dst: Path) -> None:
    """Copy a live database with SQLite's online backup API (all pages in one step: one snapshot, even
    while another process writes). The copy is 0600: the jobs database holds webhook payloads."""
    source = sqlite3.connect(f"{src.resolve().as_uri()}?mode=rw", uri=True, timeout=30)
    try:
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        target = sqlite3.connect(dst)
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()
    _fsync(dst)


def describe_sqlite(path: Path) -> tuple[str | None, list[str], dict[str, int], str | None]:
    """(quick_check problem or None, applied migration ids, rows per table, journal instance id)."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True)
    try:
        check = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
        problem = None if check == ["ok"] else "; ".join(check)
        names = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        tables = {n: int(conn.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0]) for n in names}
        migrations = []
        if "_yoyo_migration" in tables:
            migrations = [
                str(r[0])
                for r in conn.execute("SELECT migration_id FROM _yoyo_migration ORDER BY migration_id")
            ]
        instance = None
        if "journal_meta" in tables:
            row = conn.execute("SELECT instance_id FROM journal_meta WHERE id = 1").fetchone()
            instance = str(row[0]) if row else None
    finally:
        conn.close()
    return problem, migrations, tables, instance


# ---- create -----------------------------------------------------------------------------------------


def create_backup(
    paths: StorePaths,
    dest: Path,
    *,
    kodiai_version: str,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> BackupManifest:
    """Back every store up into ``dest`` (absent or an empty directory) while the server may run."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} already exists and is not an empty directory")
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = dest.parent / f".{dest.name}.partial-{os.getpid()}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(mode=0o700)
    try:
        manifest = _fill(paths, work, kodiai_version, now)
        if dest.exists():
            dest.rmdir()
        os.rename(work, dest)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return manifest


def _fill(paths: StorePaths, work: Path, version: str, now: Callable[[], datetime]) -> BackupManifest:
    databases: dict[str, DatabaseEntry] = {}
    skipped: dict[str, str] = {}
    for name in DATABASES:
        src = paths.database(name)
        if not src.is_file():
            skipped[name] = f"no database at {src}"
            continue
        copy = work / f"{name}.db"
        backup_sqlite(src, copy)
        problem, migrations, tables, instance = describe_sqlite(copy)
        if problem:
            raise BackupError(f"{name} ({src}) is damaged: {problem}")
        databases[name] = DatabaseEntry(
            file=copy.name,
            source=str(src.resolve()),
            sha256=sha256_file(copy),
            bytes=copy.stat().st_size,
            migrations=migrations,
            tables=tables,
            journal_instance=instance,
        )
    memory = None
    if is_remote_uri(paths.memory):
        skipped["memory"] = (
            f"{paths.memory} is object storage: back the bucket up with its own tools (docs/operations.md)"
        )
    elif not backup_lance.table_dirs(local_memory_path(paths.memory)):
        skipped["memory"] = f"no learned-memory tables at {paths.memory}"
    else:
        summaries = backup_lance.copy_store(local_memory_path(paths.memory), work / MEMORY_DIR)
        memory = MemoryEntry(
            dir=MEMORY_DIR,
            source=str(local_memory_path(paths.memory).resolve()),
            tables={s.name: s.as_json() for s in summaries},
        )
    manifest = BackupManifest(
        format=FORMAT,
        kodiai_version=version,
        created_at=now().astimezone(UTC).isoformat(),
        databases=databases,
        memory=memory,
        skipped=skipped,
    )
    target = work / MANIFEST_NAME
    target.write_text(json.dumps(manifest.model_dump(), indent=2) + "\n", encoding="utf-8")
    _fsync(target)
    return manifest


# ---- verify -----------------------------------------------------------------------------------------


def read_manifest(src: Path) -> BackupManifest:
    path = src / MANIFEST_NAME
    if not path.is_file():
        raise BackupError(f"{src} is not a Kodiai backup (no {MANIFEST_NAME})")
    try:
        manifest = BackupManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise BackupError(f"{path} is not a readable backup manifest: {exc}") from None
    if manifest.format.split("/")[0] != FORMAT.split("/")[0]:
        raise BackupError(f"{path}: unknown format {manifest.format!r}")
    return manifest


def verify_backup(src: Path) -> tuple[BackupManifest, list[str]]:
    """The manifest and every way the backup differs from it (empty: fit to restore)."""
    manifest = read_manifest(src)
    problems = []
    for name, entry in manifest.databases.items():
        copy = src / entry.file
        if not copy.is_file():
            problems.append(f"{name}: {copy} is missing")
            continue
        if sha256_file(copy) != entry.sha256:
            problems.append(f"{name}: {copy} does not match its checksum (changed or damaged)")
            continue
        problem, _, tables, _ = describe_sqlite(copy)
        if problem:
            problems.append(f"{name}: {copy} is damaged: {problem}")
        elif tables != entry.tables:
            problems.append(f"{name}: row counts differ from the manifest")
    if manifest.memory is not None:
        problems += _verify_memory(src / manifest.memory.dir, manifest.memory.tables)
    return manifest, problems


def _verify_memory(root: Path, expected: dict[str, dict[str, Any]]) -> list[str]:
    problems = []
    for name, want in expected.items():
        table = root / f"{name}.lance"
        try:
            got = backup_lance.summarise_table(table)
        except Exception as exc:
            problems.append(f"memory table {name}: cannot be read: {type(exc).__name__}: {exc}")
            continue
        if (got.version, got.rows) != (want.get("version"), want.get("rows")):
            problems.append(
                f"memory table {name}: version {got.version} with {got.rows} rows, the manifest says "
                f"version {want.get('version')} with {want.get('rows')} rows"
            )
    return problems


# ---- restore ----------------------------------------------------------------------------------------


def _holds_data(path: Path) -> bool:
    if path.is_dir():
        return any(path.iterdir())
    if path.is_file() and path.stat().st_size > 0:
        return True
    return any(Path(f"{path}{suffix}").exists() for suffix in COMPANIONS)


def select_stores(manifest: BackupManifest, only: set[str] | None) -> BackupManifest:
    """The manifest limited to the stores named in ``only`` (``telemetry``, ``knowledge``, ``jobs``,
    ``memory``); all of them when ``only`` is empty. A name the backup does not hold is an error."""
    if not only:
        return manifest
    held = {*manifest.databases, *(["memory"] if manifest.memory else [])}
    missing = sorted(only - held)
    if missing:
        raise BackupError(f"the backup holds no {', '.join(missing)} (it holds {', '.join(sorted(held))})")
    return manifest.model_copy(
        update={
            "databases": {n: e for n, e in manifest.databases.items() if n in only},
            "memory": manifest.memory if "memory" in only else None,
            "skipped": {},
        }
    )


def occupied_targets(manifest: BackupManifest, paths: StorePaths) -> list[str]:
    """The targets of this restore that already hold something."""
    out = [str(paths.database(n)) for n in manifest.databases if _holds_data(paths.database(n))]
    if manifest.memory is not None and _holds_data(local_memory_path(paths.memory)):
        out.append(paths.memory)
    return out


def _move_aside(path: Path, stamp: str, report: RestoreReport) -> None:
    for item in [path, *(Path(f"{path}{s}") for s in COMPANIONS)]:
        if item.exists():
            aside = item.with_name(f"{item.name}.pre-restore-{stamp}")
            os.rename(item, aside)
            report.moved_aside.append(str(aside))


def restore_backup(
    src: Path,
    paths: StorePaths,
    *,
    force: bool = False,
    only: set[str] | None = None,
    known_migrations: Callable[[str], list[str]] | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> RestoreReport:
    """Put the backup at ``src`` back in place of the stores at ``paths`` (the server must be stopped);
    ``only`` limits it to some stores (a damaged journal: ``{"jobs"}``)."""
    from kodiai.jobs.journal_guard import sidecar_path, write_sidecar

    manifest, problems = verify_backup(src)
    if problems:
        raise BackupError("the backup does not match its manifest: " + "; ".join(problems))
    manifest = select_stores(manifest, only)
    if manifest.memory is not None and is_remote_uri(paths.memory):
        raise BackupError(
            f"the backup holds a local learned memory but LEARNING_MEMORY_URI is {paths.memory}: restore "
            "it with --memory <directory> and copy that to the bucket"
        )
    occupied = occupied_targets(manifest, paths)
    if occupied and not force:
        raise RestoreRefused(occupied)
    stamp = now().astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    report = RestoreReport()
    for name, entry in manifest.databases.items():
        target = paths.database(name)
        _move_aside(target, stamp, report)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.restoring")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        shutil.copyfile(src / entry.file, tmp)
        _fsync(tmp)
        os.replace(tmp, target)
        _, _, tables, instance = describe_sqlite(target)
        if tables != entry.tables:
            raise BackupError(f"{name}: the restored {target} does not hold the backup's rows")
        if name == "jobs" and instance:
            side = sidecar_path(target)
            if side.exists() and side.read_text(encoding="utf-8").strip() != instance:
                _move_aside(side, stamp, report)
            write_sidecar(target, instance)
        report.restored.append(f"{name}: {target}")
        if known_migrations is not None:
            report.notes += migration_notes(name, entry.migrations, known_migrations(name))
    if manifest.memory is not None:
        target_dir = local_memory_path(paths.memory)
        _move_aside(target_dir, stamp, report)
        tmp_dir = target_dir.with_name(f".{target_dir.name}.restoring")
        shutil.rmtree(tmp_dir, ignore_errors=True)
        target_dir.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src / manifest.memory.dir, tmp_dir)
        os.replace(tmp_dir, target_dir)
        problems = _verify_memory(target_dir, manifest.memory.tables)
        if problems:
            raise BackupError("; ".join(problems))
        report.restored.append(f"memory: {target_dir}")
        models = sorted({m for t in manifest.memory.tables.values() for m in t.get("models", {})})
        if models:
            report.notes.append(
                "memory: written by " + ", ".join(models) + "; memories of another model than the server's "
                "embedder are marked stale at its next start"
            )
    for name, reason in manifest.skipped.items():
        report.notes.append(f"{name}: not in the backup ({reason})")
    return report
