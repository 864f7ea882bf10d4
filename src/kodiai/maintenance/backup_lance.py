"""A consistent copy of the learned-memory LanceDB directory while the server keeps writing to it.

A Lance table is a directory of immutable files (``data/``, ``_indices/``, ``_deletions/``,
``_transactions/``) and one manifest per version in ``_versions/``; a version's manifest is written only
after every file it names, and is never changed afterwards. One pass of the copy lists the manifests
first, then copies every other file, then exactly the manifests it listed. When the manifests are the
same after the pass as before it, no version was committed or removed meanwhile, so the listed latest
version stayed the latest throughout (Lance's cleanup never removes the latest version or its files) and
every file it names was copied: the copy is that version. Otherwise (the server committed a write, or
``optimize()`` cleaned old versions up, during the pass) the pass is repeated; files are immutable, so a
repeat copies only what is new and drops what the source removed, and converges in milliseconds.
``latest_version_hint.json`` is the one file Lance rewrites in place; it is a hint, so it is left out and
the copy finds its latest version by listing ``_versions/``. Last, the copy is opened with LanceDB at the
version it should hold and every row is read.
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
ATTEMPTS = 20
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


def _same(src: os.stat_result, dst: Path) -> bool:
    try:
        st = dst.stat()
    except FileNotFoundError:
        return False
    return (st.st_size, st.st_mtime_ns) == (src.st_size, src.st_mtime_ns)


def _copy_file(src: Path, dst: Path) -> bool:
    """Copy one file (with its times, so a later pass can tell it is already there); False when it
    vanished first."""
    try:
        st = src.stat()
    except FileNotFoundError:
        return False
    if _same(st, dst):
        return True
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copy2(src, dst)
    except FileNotFoundError:
        return False
    return True


def _files(root: Path) -> set[Path]:
    """Every file under ``root`` but ``_versions/``, relative to it."""
    out: set[Path] = set()
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        if rel == Path("."):
            dirs[:] = [d for d in dirs if d != VERSIONS_DIR]
        out.update(rel / name for name in files)
    return out


Stage = Callable[[str], None]
"""Test seam, None in production: called with ``"listed"`` (manifests listed, nothing copied yet) and
``"copied"`` (files copied, manifests not yet) in each pass, so a test can commit or clean up there."""


def _pass(src: Path, dst: Path, stage: Stage | None) -> tuple[int, bool]:
    """One pass; returns the latest version listed and whether the copy is that version, consistent."""
    before = _manifests(src)
    if not before:
        raise LanceCopyError(f"{src} has no version manifest: not a readable Lance table")
    if stage:
        stage("listed")
    wanted = _files(src)
    complete = all(_copy_file(src / rel, dst / rel) for rel in sorted(wanted))
    for rel in _files(dst) - wanted:  # removed from the source since an earlier pass
        (dst / rel).unlink()
    if stage:
        stage("copied")
    (dst / VERSIONS_DIR).mkdir(parents=True, exist_ok=True)
    for name in before:
        complete &= _copy_file(src / VERSIONS_DIR / name, dst / VERSIONS_DIR / name)
    for entry in os.scandir(dst / VERSIONS_DIR):
        if entry.name not in before:
            os.unlink(entry.path)
    return max(before.values()), complete and _manifests(src) == before


def summarise_table(table_dir: Path) -> TableSummary:
    """Open a copied table with LanceDB and read every row, every column, in batches (a missing or
    damaged data or deletion file fails here; index files are read only when searched)."""
    import lancedb

    db = lancedb.connect(str(table_dir.parent))
    name = table_dir.name.removesuffix(".lance")
    table = db.open_table(name)
    columns = set(table.schema.names)
    read = sum(batch.num_rows for batch in table.search().to_batches(batch_size=4096))
    rows = int(table.count_rows())
    if read != rows:
        raise LanceCopyError(f"{table_dir}: read {read} rows of {rows}")
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


def copy_table(src: Path, dst: Path, *, attempts: int = ATTEMPTS, stage: Stage | None = None) -> TableSummary:
    """Copy one Lance table directory to ``dst`` at its latest version (passes until one is undisturbed)."""
    problem = ""
    for attempt in range(attempts):
        version, consistent = _pass(src, dst, stage)
        if not consistent:
            problem = "the table changed during every pass"
            time.sleep(min(0.05 * attempt, 1.0))
            continue
        try:
            summary = summarise_table(dst)
        except Exception as exc:
            raise LanceCopyError(f"the copy of {src} at version {version} cannot be read: {exc}") from exc
        if summary.version != version:
            raise LanceCopyError(f"the copy of {src} opened at version {summary.version}, not {version}")
        return summary
    raise LanceCopyError(
        f"could not copy {src} consistently in {attempts} passes ({problem}); stop the server and run the "
        "backup again"
    )


def copy_store(src: Path, dst: Path, *, stage: Stage | None = None) -> list[TableSummary]:
    """Copy every table of the LanceDB directory ``src`` into ``dst``; other top-level files as they are."""
    dst.mkdir(parents=True, exist_ok=False)
    summaries = [copy_table(table, dst / table.name, stage=stage) for table in table_dirs(src)]
    for entry in src.iterdir():
        if entry.is_file():
            _copy_file(entry, dst / entry.name)
    return summaries
