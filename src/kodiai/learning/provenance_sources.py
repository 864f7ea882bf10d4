"""Read-only openers for the operator's provenance views (`kodiai memory list` / `stats`).

:class:`KnowledgeStore` migrates the file it opens (and creates a missing one); an operator's listing must
do neither, so :class:`ReadOnlyKnowledge` reads the same queries (:mod:`kodiai.storage.knowledge_feedback`)
over a ``mode=ro`` connection (or the PostgreSQL database of ``DATABASE_URL``) and degrades on a file that predates the governance table or the findings'
comment linkage instead of failing. :func:`open_existing_store` likewise opens a LanceDB memory table only
when it exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import lancedb

from kodiai.learning.embeddings import EmbeddingProvider
from kodiai.learning.memory_store import LanceMemoryStore
from kodiai.learning.setup import memory_table_name, open_store_for_provider
from kodiai.storage import knowledge_feedback as feedback
from kodiai.storage import knowledge_trust as trust
from kodiai.storage.database import Database, SqliteDatabase
from kodiai.storage.knowledge_models import (
    FindingProvenance,
    MemoryGovernanceRecord,
    PendingMemory,
    ReactionRow,
)


class ReadOnlyKnowledge:
    """The knowledge DB for provenance, opened read-only (never created, never migrated): a SQLite file, or
    an open :class:`~kodiai.storage.database.Database` (the PostgreSQL database of ``DATABASE_URL``)."""

    def __init__(self, path: str | Path | Database) -> None:
        if isinstance(path, str | Path):
            self.path = str(path)
            self._db: Database = SqliteDatabase.open(path, read_only=True)
        else:
            self._db = path
            self.path = path.describe()
        known = ("reviews", "findings", "memory_governance", "feedback_reactions", "pending_memories")
        columns = {table: {name for name, _ in self._db.columns(table)} for table in known}
        tables = {table for table, names in columns.items() if names}
        finding_columns = columns["findings"]
        self.has_governance = "memory_governance" in tables
        self.has_reactions = "feedback_reactions" in tables
        self.has_pending = "pending_memories" in tables
        self.has_findings = {"reviews", "findings"} <= tables and {
            "comment_id",
            "comment_surface",
        } <= finding_columns

    @property
    def missing(self) -> list[str]:
        """What this file lacks (an older schema: ``kodiai db upgrade`` adds it)."""
        out = [] if self.has_findings else ["findings.comment_id"]
        out += [] if self.has_reactions else ["feedback_reactions"]
        out += [] if self.has_governance else ["memory_governance"]
        return out + ([] if self.has_pending else ["pending_memories"])

    def finding_provenance(self, repo: str, comment_ids: Sequence[int]) -> dict[int, FindingProvenance]:
        return feedback.finding_provenance(self._db, repo, comment_ids) if self.has_findings else {}

    def reactions_for(self, repo: str, comment_ids: Sequence[int]) -> dict[int, list[ReactionRow]]:
        return feedback.reactions_for(self._db, repo, comment_ids) if self.has_reactions else {}

    def list_memory_governance(self, repo: str | None = None) -> list[MemoryGovernanceRecord]:
        return feedback.list_governance(self._db, repo) if self.has_governance else []

    def list_pending_memories(self, repo: str | None = None) -> list[PendingMemory]:
        return trust.list_pending(self._db, repo) if self.has_pending else []

    def close(self) -> None:
        self._db.close()


def open_existing_store(uri: str, provider: EmbeddingProvider) -> LanceMemoryStore | None:
    """The provider's memory table at ``uri``, or None when it has none (nothing is created).

    A local ``uri`` that does not exist raises :class:`FileNotFoundError` (``lancedb.connect`` would create
    the directory); object-store URIs are asked for their tables.
    """
    if "://" not in uri and not Path(uri).is_dir():
        raise FileNotFoundError(f"No memory store at {uri}")
    if provider.dimensions <= 0:
        return None
    if memory_table_name(provider.dimensions) not in lancedb.connect(uri).list_tables().tables:
        return None
    return open_store_for_provider(uri, provider, mark_stale=False)
