"""Knowledge store: reviews, findings, suppressions, global patterns, feedback reactions, run state, author
cache and dep-bump merge history (behaviour P6.2), in the original's tables.

A SQLite file, or the PostgreSQL database when given a ``postgresql://`` URL (``DATABASE_URL``; see
:mod:`kodiai.storage.database`): the same tables, the same SQL. Foreign keys are enforced (a finding or
reaction for a missing parent raises an integrity error: :class:`sqlite3.IntegrityError`, or psycopg's);
the ``knowledge`` migrations run when it opens. Batch inserts run in one transaction each: one bad row rolls
the batch back; an empty batch is a no-op.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from kodiai.storage import knowledge_feedback as feedback
from kodiai.storage import knowledge_pr_reviews as pr_reviews
from kodiai.storage import knowledge_reports as reports
from kodiai.storage import knowledge_runs as runs
from kodiai.storage import knowledge_trust as trust
from kodiai.storage.coerce import RecordLike, as_record
from kodiai.storage.database import Database
from kodiai.storage.feedback_tally import FeedbackTally
from kodiai.storage.knowledge_hits import RetrievalHit, record_hits
from kodiai.storage.knowledge_models import (
    AuthorCacheEntry,
    DecisionHow,
    DepBumpMergeHistoryRecord,
    FeedbackPattern,
    FeedbackReactionRecord,
    FindingByComment,
    FindingCommentCandidate,
    FindingProvenance,
    FindingRecord,
    GlobalPatternRecord,
    MemoryGovernanceRecord,
    PendingMemory,
    PendingMemoryRecord,
    PendingStatus,
    PriorFinding,
    ReactionRow,
    RepoStats,
    ReviewRecord,
    RunClaim,
    SuppressionLogEntry,
    TrendRow,
)
from kodiai.storage.knowledge_resolved import StoredPrior, prior_findings_with_ids, record_resolved
from kodiai.storage.opening import open_migrated
from kodiai.storage.rollups import Sealer, rebuild_outcomes_now, seal_knowledge
from kodiai.storage.write_health import WriteHealth, database_directory, reports_writes
from kodiai.text.fingerprint import fingerprint_finding_title, fingerprint_variants, normalize_fingerprint

_REVIEW_COLUMNS = list(ReviewRecord.model_fields)
_FINDING_COLUMNS = list(FindingRecord.model_fields)
_REACTION_COLUMNS = list(FeedbackReactionRecord.model_fields)
_DEP_BUMP_COLUMNS = list(DepBumpMergeHistoryRecord.model_fields)


def _insert(table: str, columns: list[str], tail: str = "") -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)}){tail}"


class KnowledgeStore:
    """The knowledge database. Construct once in the composition root and pass it in."""

    def __init__(self, path: str | Path) -> None:
        """``path``: a SQLite file (created if missing) or ``:memory:``, or a ``postgresql://`` URL."""
        self._db: Database = open_migrated(path, "knowledge")
        self.dialect = self._db.dialect
        self.path = str(path) if self.dialect == "sqlite" else self._db.describe()
        """The SQLite file, or ``postgresql://host:port/db`` (no credentials)."""
        probe_dir = database_directory(path) if self.dialect == "sqlite" else None
        self.write_health = WriteHealth("knowledge", probe_dir)
        """Whether writes land (``/readiness``); every write method below reports to it."""
        self._sealer = Sealer(self._db, seal_knowledge, "knowledge")
        """Folds past days into the dashboard's rollups on the first write of each day."""

    # -- reviews and findings -------------------------------------------------------------------

    @reports_writes
    def record_review(self, entry: ReviewRecord | RecordLike) -> int:
        """Insert a review; returns its new integer id."""
        values = as_record(ReviewRecord, entry).model_dump()
        row = self._db.fetch_one(
            _insert("reviews", _REVIEW_COLUMNS, " RETURNING id"), tuple(values[c] for c in _REVIEW_COLUMNS)
        )
        self._sealer.after_write()
        return int(row[0]) if row else 0

    @reports_writes
    def record_findings(self, findings: Sequence[FindingRecord | RecordLike]) -> None:
        if not findings:
            return
        records = [as_record(FindingRecord, f) for f in findings]
        sql = _insert("findings", _FINDING_COLUMNS)
        with self._db.transaction() as conn:
            for finding in records:
                values = finding.model_dump()
                values["suppressed"] = 1 if finding.suppressed else 0
                conn.execute(sql, tuple(values[c] for c in _FINDING_COLUMNS))
        self._sealer.after_write()

    def list_recent_finding_comment_candidates(
        self, repo: str, limit: int = 100
    ) -> list[FindingCommentCandidate]:
        """The repo's findings linked to a posted comment, newest first (limit at least 1)."""
        rows = self._db.query(
            "SELECT f.id AS finding_id, f.review_id, r.repo, f.comment_id, f.comment_surface, f.review_output_key, "
            "f.severity, f.category, f.file_path, f.title, f.created_at FROM findings f "
            "JOIN reviews r ON r.id = f.review_id WHERE r.repo = ? AND f.comment_id IS NOT NULL "
            "AND f.comment_surface IS NOT NULL AND f.review_output_key IS NOT NULL "
            "ORDER BY f.created_at DESC, f.id DESC LIMIT ?",
            (repo, max(1, int(limit))),
        )
        return [FindingCommentCandidate(**dict(r)) for r in rows]

    def get_finding_by_comment_id(self, repo: str, comment_id: int) -> FindingByComment | None:
        rows = self._db.query(
            "SELECT f.severity, f.category, f.file_path, f.start_line, f.title FROM findings f "
            "JOIN reviews r ON r.id = f.review_id WHERE r.repo = ? AND f.comment_id = ? "
            "ORDER BY f.created_at DESC, f.id DESC LIMIT 1",
            (repo, comment_id),
        )
        return FindingByComment(**dict(rows[0])) if rows else None

    def get_prior_review_findings(
        self, repo: str, pr_number: int, limit: int = 100, *, head_sha: str | None = None
    ) -> list[PriorFinding]:
        """Unsuppressed findings of the PR's reviews at ``head_sha`` (default: the newest completed run's
        head SHA), in id order. A handler passes the SHA it read before claiming its own run (Q2)."""
        head = head_sha or self.get_last_reviewed_head_sha(repo, pr_number)
        if head is None:
            return []
        rows = self._db.query(
            "SELECT f.file_path, f.title, f.severity, f.category, f.start_line, f.end_line, f.comment_id "
            "FROM findings f JOIN reviews r ON r.id = f.review_id WHERE r.repo = ? AND r.pr_number = ? "
            "AND r.head_sha = ? AND f.suppressed = 0 ORDER BY f.id ASC LIMIT ?",
            (repo, pr_number, head, max(1, int(limit))),
        )
        return [
            PriorFinding(**dict(r), title_fingerprint=fingerprint_finding_title(r["title"])) for r in rows
        ]

    def find_prior_finding(
        self, repo: str, pr_number: int, file_path: str, fingerprint: str
    ) -> PriorFinding | None:
        """The prior finding at ``file_path`` with ``fingerprint`` in either form (``fp-…`` or bare hex)."""
        for prior in self.get_prior_review_findings(repo, pr_number):
            if prior.matches(file_path, fingerprint):
                return prior
        return None

    # -- suppressions and global patterns ------------------------------------------------------

    @reports_writes
    def record_suppression_log(self, entries: Sequence[SuppressionLogEntry | RecordLike]) -> None:
        if not entries:
            return
        records = [as_record(SuppressionLogEntry, e) for e in entries]
        with self._db.transaction() as conn:
            for e in records:
                ids = json.dumps(e.finding_ids, separators=(",", ":")) if e.finding_ids is not None else None
                conn.execute(
                    "INSERT INTO suppression_log (review_id, pattern, matched_count, finding_ids) VALUES (?, ?, ?, ?)",
                    (e.review_id, e.pattern, e.matched_count, ids),
                )

    @reports_writes
    def record_global_pattern(self, entry: GlobalPatternRecord | RecordLike) -> None:
        """Add ``count`` to the pattern (skipped when count ≤ 0). The fingerprint is stored in the ``fp-`` form;
        a row an older database wrote in bare hex is found and added to instead of duplicated."""
        entry = as_record(GlobalPatternRecord, entry)
        if entry.count <= 0:
            return
        full, bare = fingerprint_variants(entry.pattern_fingerprint)
        key = (entry.severity, entry.category, entry.confidence_band)
        with self._db.transaction() as conn:
            row = conn.fetch_one(
                "SELECT id FROM global_patterns WHERE severity = ? AND category = ? AND confidence_band = ? "
                "AND pattern_fingerprint IN (?, ?) ORDER BY pattern_fingerprint = ? DESC, id LIMIT 1",
                (*key, full, bare, full),
            )
            if row:
                conn.execute(
                    "UPDATE global_patterns SET count = count + ? WHERE id = ?", (entry.count, row[0])
                )
            else:
                conn.execute(
                    "INSERT INTO global_patterns (severity, category, confidence_band, pattern_fingerprint, count) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (*key, normalize_fingerprint(entry.pattern_fingerprint), entry.count),
                )

    def get_global_pattern_count(
        self, severity: str, category: str, confidence_band: str, fingerprint: str
    ) -> int:
        """Total count of a pattern, matching stored fingerprints of either form."""
        row = self._db.fetch_one(
            "SELECT COALESCE(SUM(count), 0) FROM global_patterns WHERE severity = ? AND category = ? "
            "AND confidence_band = ? AND pattern_fingerprint IN (?, ?)",
            (severity, category, confidence_band, *fingerprint_variants(fingerprint)),
        )
        return int(row[0]) if row else 0

    # -- feedback ------------------------------------------------------------------------------

    @reports_writes
    def record_feedback_reactions(self, reactions: Sequence[FeedbackReactionRecord | RecordLike]) -> int:
        """Append reactions; duplicates of (repo, comment_id, reaction_id) are skipped. Returns rows added."""
        if not reactions:
            return 0
        records = [as_record(FeedbackReactionRecord, r) for r in reactions]
        sql = _insert("feedback_reactions", _REACTION_COLUMNS, " ON CONFLICT DO NOTHING")
        added = 0
        with self._db.transaction() as conn:
            for reaction in records:
                values = reaction.model_dump()
                added += conn.execute(sql, tuple(values[c] for c in _REACTION_COLUMNS)).rowcount
        self._sealer.after_write()
        return added

    def aggregate_feedback_patterns(self, repo: str) -> list[FeedbackPattern]:
        return reports.feedback_patterns(self._db, repo)

    def list_feedback_suppressions(self, repo: str) -> list[FeedbackPattern]:
        return self.aggregate_feedback_patterns(repo)

    def re_review_scope(self, repo: str, pr_number: int) -> frozenset[int] | None:
        """The PR's earlier review ids (the learned memory's re-review scope), None for a first review."""
        return pr_reviews.re_review_scope(self._db, repo, pr_number)

    @reports_writes
    def clear_feedback_suppressions(self, repo: str) -> int:
        with self._db.transaction() as tx:  # the dashboard's per-review outcomes of those reactions with them
            rows = tx.fetch_all("DELETE FROM feedback_reactions WHERE repo = ? RETURNING review_id", (repo,))
            rebuild_outcomes_now(tx, {int(r[0]) for r in rows})
        return len(rows)

    @reports_writes
    def remove_withdrawn_reactions(self, repo: str, comment_id: int, kept_reaction_ids: Sequence[int]) -> int:
        """Forget the comment's stored reactions that are gone from GitHub; returns rows deleted."""
        return feedback.remove_withdrawn_reactions(self._db, repo, comment_id, kept_reaction_ids)

    def feedback_tallies(self, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], FeedbackTally]:
        """Human thumbs per ``(repo, comment_id)`` (= a memory's ``(source_repo, finding_id)``)."""
        return feedback.feedback_tallies(self._db, keys)

    def reactions_for(self, repo: str, comment_ids: Sequence[int]) -> dict[int, list[ReactionRow]]:
        return feedback.reactions_for(self._db, repo, comment_ids)

    def finding_provenance(self, repo: str, comment_ids: Sequence[int]) -> dict[int, FindingProvenance]:
        return feedback.finding_provenance(self._db, repo, comment_ids)

    # -- memory governance ---------------------------------------------------------------------

    @reports_writes
    def record_memory_governance(self, entry: MemoryGovernanceRecord | RecordLike) -> MemoryGovernanceRecord:
        return feedback.record_governance(self._db, as_record(MemoryGovernanceRecord, entry))

    def list_memory_governance(self, repo: str | None = None) -> list[MemoryGovernanceRecord]:
        return feedback.list_governance(self._db, repo)

    def retired_findings(self, repo: str) -> set[int]:
        return feedback.retired_findings(self._db, repo)

    @reports_writes
    def record_retrieval_hits(self, hits: Sequence[RetrievalHit]) -> int:
        """The memories one retrieval looked at (``retrieval_hits``, read by the dashboard)."""
        return record_hits(self._db, hits)

    def get_prior_findings_with_ids(self, repo: str, pr_number: int, head_sha: str) -> list[StoredPrior]:
        """The re-review's priors (as :meth:`get_prior_review_findings` at ``head_sha``) with their ids."""
        return prior_findings_with_ids(self._db, repo, pr_number, head_sha)

    @reports_writes
    def record_resolved_findings(
        self, review_id: int, repo: str, pr_number: int, finding_ids: Sequence[int]
    ) -> int:
        """The earlier findings ``review_id`` found fixed (``resolved_findings``, read by the dashboard)."""
        added = record_resolved(self._db, review_id, repo, pr_number, finding_ids)
        self._sealer.after_write()
        return added

    # -- findings held back from memory (untrusted authors) -------------------------------------

    @reports_writes
    def record_pending_memories(self, rows: Sequence[PendingMemoryRecord]) -> int:
        """Hold findings of an untrusted author's PR back from learned memory until a writer confirms."""
        return trust.record_pending(self._db, rows)

    def pending_memories_for_pr(
        self, repo: str, pr_number: int, statuses: Sequence[PendingStatus] = ("pending",)
    ) -> list[PendingMemory]:
        return trust.pending_for_pr(self._db, repo, pr_number, statuses)

    def pending_memories_by_comment(self, repo: str, comment_ids: Sequence[int]) -> dict[int, PendingMemory]:
        return trust.pending_by_comment(self._db, repo, comment_ids)

    def list_pending_memories(self, repo: str | None = None) -> list[PendingMemory]:
        return trust.list_pending(self._db, repo)

    @reports_writes
    def decide_pending_memories(
        self,
        ids: Sequence[int],
        status: PendingStatus,
        *,
        by: str | None,
        how: DecisionHow,
        only_from: Sequence[PendingStatus] = ("pending",),
    ) -> int:
        """Promote or discard held-back findings still in one of ``only_from``; returns rows changed."""
        return trust.decide(self._db, ids, status, by=by, how=how, only_from=only_from)

    # -- dep bumps -----------------------------------------------------------------------------

    @reports_writes
    def record_dep_bump_merge_history(self, entry: DepBumpMergeHistoryRecord | RecordLike) -> bool:
        """Insert-or-ignore on (repo, pr_number): the first write wins. ``False`` when one was there."""
        entry = as_record(DepBumpMergeHistoryRecord, entry)
        values = entry.model_dump()
        flag = entry.is_security_bump
        values["is_security_bump"] = None if flag is None else (1 if flag else 0)
        sql = _insert("dep_bump_merge_history", _DEP_BUMP_COLUMNS, " ON CONFLICT DO NOTHING")
        return self._db.execute(sql, tuple(values[c] for c in _DEP_BUMP_COLUMNS)).rowcount > 0

    # -- reports -------------------------------------------------------------------------------

    def get_repo_stats(self, repo: str, since_days: int | None = None) -> RepoStats:
        since = reports.cutoff_days_ago(self._db, since_days) if since_days is not None else None
        return reports.repo_stats(self._db, repo, since)

    def get_repo_trends(self, repo: str, days: int) -> list[TrendRow]:
        return reports.repo_trends(self._db, repo, days)

    # -- run state and author cache ------------------------------------------------------------

    @reports_writes
    def check_and_claim_run(
        self, *, repo: str, pr_number: int, base_sha: str, head_sha: str, delivery_id: str, action: str
    ) -> RunClaim:
        return runs.check_and_claim_run(
            self._db,
            repo=repo,
            pr_number=pr_number,
            base_sha=base_sha,
            head_sha=head_sha,
            delivery_id=delivery_id,
            action=action,
        )

    def run_delivery(self, run_key: str) -> tuple[str | None, str] | None:
        """``(delivery_id, status)`` of a claimed run (tells a replay of the same delivery from a duplicate)."""
        return runs.run_delivery(self._db, run_key)

    @reports_writes
    def release_run(self, run_key: str, delivery_id: str) -> None:
        runs.release_run(self._db, run_key, delivery_id)

    @reports_writes
    def complete_run(self, run_key: str) -> None:
        runs.complete_run(self._db, run_key)

    @reports_writes
    def purge_old_runs(self, retention_days: int = 30) -> int:
        return runs.purge_old_runs(self._db, retention_days)

    def get_last_reviewed_head_sha(self, repo: str, pr_number: int) -> str | None:
        return runs.last_reviewed_head_sha(self._db, repo, pr_number)

    def get_author_cache(self, repo: str, author_login: str) -> AuthorCacheEntry | None:
        return runs.get_author_cache(self._db, repo, author_login)

    @reports_writes
    def upsert_author_cache(
        self, *, repo: str, author_login: str, tier: str, author_association: str, pr_count: int | None
    ) -> None:
        runs.upsert_author_cache(
            self._db,
            repo=repo,
            author_login=author_login,
            tier=tier,
            author_association=author_association,
            pr_count=pr_count,
        )

    @reports_writes
    def purge_stale_author_cache(self, days: int = runs.AUTHOR_CACHE_RETENTION_DAYS) -> int:
        return runs.purge_stale_author_cache(self._db, days)

    # -- lifecycle -----------------------------------------------------------------------------

    def checkpoint(self) -> tuple[int, int, int]:
        """PASSIVE WAL checkpoint ((0, 0, 0) on PostgreSQL)."""
        return self._db.checkpoint()

    def close(self) -> None:
        """Close; never raises. Any later call raises ``sqlite3.ProgrammingError``."""
        self.write_health.close()
        self._db.close()
