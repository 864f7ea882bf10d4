"""A consistent copy of the learned-memory LanceDB directory while the server keeps writing to it.

A Lance table is a directory of immutable files (``data/``, ``_indices/``, ``_deletions/``,
``_transactions/``) and one manifest per version in ``_versions/``; a version's manifest is written only
after every file it names, and is never changed afterwards. So a copy is consistent when it takes the
manifests that existed *before* the other files were listed: every file those manifests name already
existed and is copied, and files written later are unreferenced leftovers (harmless; Lance's own cleanup
removes them after a week). ``latest_version_hint.json`` is the one file Lance rewrites in place; it is a
hint, so it is left out and the copy finds its latest version by listing ``_versions/``.

The one thing that can remove a needed file is Lance's cleanup (``table.optimize()``, which the server
runs after writes): it deletes versions older than 7 days *that are not the latest*, and the files only
they used. The version being copied stops being the latest only if a new one is written meanwhile; the
copy is then retried when that version was old (over a day) or any listed file vanished. Last, the copy
is opened with LanceDB at the version it should hold and every row is read.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSIONS_DIR = "_versions"
#: A manifest younger than this cannot be removed by the server's cleanup (7 days) during a copy.
SAFE_MANIFEST_AGE_SECONDS = 24 * 3600.0
ATTEMPTS = 5
_U64_MAX = 2**64 - 1


class LanceCopyError(RuntimeError):
    """The table could not be copied consistently (it changed under every attempt, or the copy is broken)."""


@dataclass(frozen=True)
class TableSummary:
    """What a copied table holds (recorded in the backup manifest, checked again at restore)."""

    name: str
    version: int
    rows: int
    live_rows: int
    dimensions: int | None
    models: dict[str, int] = field(default_factory=dict)
    """Live (non-stale) rows per embedding model."""
    indices: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "rows": self.rows,
            "live_rows": self.live_rows,
            "dimensions": self.dimensions,
            "models": dict(self.models),
            "indices": list(self.indices),
        }


def manifest_version(name: str) -> int:
    """The table version a ``_versions/`` file name stands for (Lance's V1 ``<n>.manifest`` names, or its
    V2 names: 20 digits of ``u64::MAX - n``, so that the newest sorts first)."""
    stem = name.removesuffix(".manifest")
    number = int(stem)
    return _U64_MAX - number if len(stem) == 20 else number


def table_dirs(root: Path) -> list[Path]:
    """The Lance tables (``<name>.lance`` directories with a ``_versions/``) directly under ``root``."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / VERSIONS_DIR).is_dir())


def _manifests(table: Path) -> dict[str, int]:
    """``_versions/`` file name → version, for every complete manifest."""
    out = {}
    for entry in os.scandir(table / VERSIONS_DIR):
        if entry.name.endswith(".manifest"):
            try:
                out[entry.name] = manifest_version(entry.name)
            except ValueError:  # a temporary file of a commit in progress
                continue
    return out


def _copy_file(src: Path, dst: Path) -> bool:
    """Copy one file; False when it vanished first."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copy2(src, dst)
    except FileNotFoundError:
        return False
    return True


def _copy_once(src: Path, dst: Path, now: Callable[[], float]) -> tuple[int, bool]:
    """One attempt: returns the version copied and whether the copy must be retried."""
    before = _manifests(src)
    if not before:
        raise LanceCopyError(f"{src} has no version manifest: not a readable Lance table")
    latest_name = max(before, key=before.__getitem__)
    latest = before[latest_name]
    try:
        latest_age = now() - (src / VERSIONS_DIR / latest_name).stat().st_mtime
    except FileNotFoundError:
        return latest, True
    vanished = False
    for folder, dirs, files in os.walk(src):
        here = Path(folder)
        rel = here.relative_to(src)
        if rel.parts[:1] == (VERSIONS_DIR,):
            dirs[:] = []
            continue
        for name in files:
            vanished |= not _copy_file(here / name, dst / rel / name)
    (dst / VERSIONS_DIR).mkdir(parents=True, exist_ok=True)
    for name in sorted(before, key=before.__getitem__):
        copied = _copy_file(src / VERSIONS_DIR / name, dst / VERSIONS_DIR / name)
        vanished |= not copied
        if not copied and name == latest_name:
            return latest, True
    newer = max(_manifests(src).values(), default=latest) > latest
    return latest, newer and (vanished or latest_age > SAFE_MANIFEST_AGE_SECONDS)


def summarise_table(table_dir: Path) -> TableSummary:
    """Open a copied table with LanceDB and read every row's id (a missing data file fails here)."""
    import lancedb

    db = lancedb.connect(str(table_dir.parent))
    name = table_dir.name.removesuffix(".lance")
    table = db.open_table(name)
    columns = set(table.schema.names)
    ids = table.search().select(["id"] if "id" in columns else [table.schema.names[0]]).to_arrow()
    rows = int(table.count_rows())
    if ids.num_rows != rows:
        raise LanceCopyError(f"{table_dir}: read {ids.num_rows} rows of {rows}")
    live_filter = "stale = false" if "stale" in columns else None
    live_rows = int(table.count_rows(live_filter)) if live_filter else rows
    models: Counter[str] = Counter()
    if "embedding_model" in columns:
        query = table.search().select(["embedding_model"])
        if live_filter:
            query = query.where(live_filter)
        models.update(str(m) for m in query.to_arrow().column("embedding_model").to_pylist())
    dimensions = None
    if "vector" in columns:
        dimensions = int(getattr(table.schema.field("vector").type, "list_size", 0)) or None
    indices = sorted(str(getattr(i, "name", i)) for i in table.list_indices())
    return TableSummary(name, int(table.version), rows, live_rows, dimensions, dict(models), indices)


def copy_table(
    src: Path, dst: Path, *, now: Callable[[], float] = time.time, attempts: int = ATTEMPTS
) -> TableSummary:
    """Copy one Lance table directory to ``dst`` (which must not exist) at its latest version."""
    last_error = ""
    for _ in range(attempts):
        if dst.exists():
            shutil.rmtree(dst)
        version, retry = _copy_once(src, dst, now)
        if retry:
            last_error = f"version {version} was superseded and cleaned up during the copy"
            continue
        summary = summarise_table(dst)
        if summary.version != version:
            last_error = f"the copy opened at version {summary.version}, not {version}"
            continue
        return summary
    raise LanceCopyError(
        f"could not copy {src} consistently in {attempts} attempts ({last_error}); pause the server's "
        "writes (stop it) and run the backup again"
    )


def copy_store(src: Path, dst: Path, *, now: Callable[[], float] = time.time) -> list[TableSummary]:
    """Copy every table of the LanceDB directory ``src`` into ``dst``; other top-level files as they are."""
    dst.mkdir(parents=True, exist_ok=False)
    tables = table_dirs(src)
    summaries = [copy_table(table, dst / table.name, now=now) for table in tables]
    for entry in src.iterdir():
        if entry.is_file():
            _copy_file(entry, dst / entry.name)
    return summaries
