"""``resolved_findings``: the findings of an earlier review of a PR that a later review found fixed (issue 28).

Written by the review's record step (:mod:`kodiai.review.resolved_findings`) after a re-review, read by the
dashboard's memory page (:mod:`kodiai.dashboard.queries_memory`). One row per (finding, resolving review):
``ON CONFLICT DO NOTHING`` makes a redelivery add nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kodiai.storage.database import Database


class StoredPrior(BaseModel):
    """A finding of the PR's earlier review with its ``findings.id`` (what a resolution row points at)."""

    model_config = ConfigDict(frozen=True)

    finding_id: int
    file_path: str
    title: str


def prior_findings_with_ids(
    db: Database, repo: str, pr_number: int, head_sha: str, limit: int = 100
) -> list[StoredPrior]:
    """The rows :meth:`KnowledgeStore.get_prior_review_findings` reads (unsuppressed findings of the PR's
    reviews at ``head_sha``, in id order, the same limit), with their ids: the priors the delta classified."""
    rows = db.query(
        "SELECT f.id AS finding_id, f.file_path, f.title FROM findings f JOIN reviews r ON r.id = f.review_id"
        " WHERE r.repo = ? AND r.pr_number = ? AND r.head_sha = ? AND f.suppressed = 0 ORDER BY f.id ASC LIMIT ?",
        (repo, pr_number, head_sha, max(1, int(limit))),
    )
    return [StoredPrior(**dict(r)) for r in rows]


def record_resolved(
    db: Database, review_id: int, repo: str, pr_number: int, finding_ids: Sequence[int]
) -> int:
    """One row per finding ``review_id`` found resolved, in one transaction; returns how many were new."""
    if not finding_ids:
        return 0
    added = 0
    with db.transaction() as tx:
        for finding_id in finding_ids:
            added += tx.execute(
                "INSERT INTO resolved_findings (finding_id, review_id, repo, pr_number) VALUES (?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (finding_id, review_id, repo, pr_number),
            ).rowcount
    return added
