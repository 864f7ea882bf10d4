"""Which reviews a PR already had: the input of the learned memory's re-review scope.

Every learned memory carries the ``review_id`` of the knowledge DB ``reviews`` row it came from, so on a
re-review (a ``synchronize`` of a PR Kodiai reviewed before) the ids of the PR's earlier reviews select
exactly the memories this PR produced (:mod:`kodiai.learning.same_pr`). Read-only; takes a plain
connection like :mod:`kodiai.storage.knowledge_reports` (a read-only :class:`sqlite3.Connection`, or the
store's database, SQLite or PostgreSQL).
"""

from __future__ import annotations

import sqlite3

from kodiai.storage.database import Executor, as_executor


def earlier_review_ids(
    conn: sqlite3.Connection | Executor, repo: str, pr_number: int, *, current_review_id: int | None = None
) -> frozenset[int]:
    """The ids of the ``reviews`` rows of ``(repo, pr_number)``; ``current_review_id`` (when the running
    review's row is already written) and any later row are left out. Uses ``idx_reviews_pr``."""
    sql = "SELECT id FROM reviews WHERE repo = ? AND pr_number = ?"
    params: tuple[object, ...] = (repo, int(pr_number))
    if current_review_id is not None:
        sql += " AND id < ?"
        params += (int(current_review_id),)
    return frozenset(int(row[0]) for row in as_executor(conn).fetch_all(sql, params))


def re_review_scope(
    conn: sqlite3.Connection | Executor, repo: str, pr_number: int, *, current_review_id: int | None = None
) -> frozenset[int] | None:
    """``same_pr_review_ids`` for ``retrieve_context``: the PR's earlier review ids, or None when Kodiai
    never reviewed the PR before — then the review is a first review for the learned memory (its normal
    cut runs), not a re-review that found nothing earlier (which abstains)."""
    ids = earlier_review_ids(conn, repo, pr_number, current_review_id=current_review_id)
    return ids or None
