"""Run state (review idempotency per SHA pair) and the author-tier cache of the knowledge DB (P6.2)."""

from __future__ import annotations

from kodiai.storage.database import Database
from kodiai.storage.knowledge_models import AuthorCacheEntry, RunClaim

AUTHOR_CACHE_TTL_HOURS = 24
AUTHOR_CACHE_RETENTION_DAYS = 7
SUPERSEDED_RETENTION_DAYS = 7


def run_key(repo: str, pr_number: int, base_sha: str, head_sha: str) -> str:
    """``<repo>:pr-<n>:base-<baseSha>:head-<headSha>``; the delivery id plays no part in identity."""
    return f"{repo}:pr-{pr_number}:base-{base_sha}:head-{head_sha}"


def check_and_claim_run(
    db: Database,
    *,
    repo: str,
    pr_number: int,
    base_sha: str,
    head_sha: str,
    delivery_id: str,
    action: str,
) -> RunClaim:
    """Claim a run in one transaction: an existing key → ``duplicate``; otherwise supersede every other
    non-superseded run of the PR (completed ones too) and insert a ``pending`` row."""
    key = run_key(repo, pr_number, base_sha, head_sha)
    with db.transaction() as conn:
        if conn.fetch_one("SELECT 1 FROM run_state WHERE run_key = ?", (key,)):
            return RunClaim(should_process=False, reason="duplicate", run_key=key)
        superseded = [
            str(r[0])
            for r in conn.fetch_all(
                "SELECT run_key FROM run_state WHERE repo = ? AND pr_number = ? AND status != 'superseded' ORDER BY id",
                (repo, pr_number),
            )
        ]
        if superseded:
            conn.execute(
                "UPDATE run_state SET status = 'superseded', superseded_by = ? "
                "WHERE repo = ? AND pr_number = ? AND status != 'superseded'",
                (key, repo, pr_number),
            )
        conn.execute(
            "INSERT INTO run_state (run_key, repo, pr_number, base_sha, head_sha, delivery_id, action, status) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')",
            (key, repo, pr_number, base_sha, head_sha, delivery_id, action),
        )
    return RunClaim(
        should_process=True,
        reason="superseded-prior" if superseded else "new",
        run_key=key,
        superseded_run_keys=superseded,
    )


def run_delivery(db: Database, key: str) -> tuple[str | None, str] | None:
    """``(delivery_id, status)`` of the run with ``key``, or None when there is no such run."""
    row = db.fetch_one("SELECT delivery_id, status FROM run_state WHERE run_key = ?", (key,))
    return (row[0], str(row[1])) if row else None


def release_run(db: Database, key: str, delivery_id: str) -> None:
    """Drop this delivery's ``pending`` claim of a run that was refused before it started (the daily spend
    cap), so a later trigger for the same head is not skipped as a duplicate. Runs it superseded stay
    superseded; :func:`last_reviewed_head_sha` reads ``completed_at``, which is unchanged."""
    with db.transaction() as conn:
        conn.execute(
            "DELETE FROM run_state WHERE run_key = ? AND delivery_id = ? AND status = 'pending'",
            (key, delivery_id),
        )


def complete_run(db: Database, key: str) -> None:
    db.execute(
        "UPDATE run_state SET status = 'completed', completed_at = datetime('now') WHERE run_key = ?", (key,)
    )


def purge_stale_author_cache(db: Database, days: int = AUTHOR_CACHE_RETENTION_DAYS) -> int:
    cur = db.execute("DELETE FROM author_cache WHERE cached_at < datetime('now', ?)", (f"-{int(days)} days",))
    return int(cur.rowcount)


def purge_old_runs(db: Database, retention_days: int = 30) -> int:
    """Completed runs older than the retention, superseded ones older than min(retention, 7) days, plus the
    stale author-cache rows (7 days). Pending rows are never purged. Returns the total deleted."""
    with db.lock:
        completed = db.execute(
            "DELETE FROM run_state WHERE status = 'completed' AND created_at < datetime('now', ?)",
            (f"-{int(retention_days)} days",),
        ).rowcount
        superseded = db.execute(
            "DELETE FROM run_state WHERE status = 'superseded' AND created_at < datetime('now', ?)",
            (f"-{min(int(retention_days), SUPERSEDED_RETENTION_DAYS)} days",),
        ).rowcount
        return int(completed) + int(superseded) + purge_stale_author_cache(db)


def last_reviewed_head_sha(db: Database, repo: str, pr_number: int) -> str | None:
    """The head SHA of the PR's most recently *completed* run, superseded or not.

    The original looked for ``status = 'completed'`` only, and every later claim (even one its trigger
    gate then dropped, e.g. a ``synchronize`` with ``onSynchronize: false``) supersedes that run, so
    incremental re-reviews almost never happened (review Q2). ``completed_at`` survives supersession.
    """
    row = db.fetch_one(
        "SELECT head_sha FROM run_state WHERE repo = ? AND pr_number = ? AND completed_at IS NOT NULL "
        "ORDER BY completed_at DESC, id DESC LIMIT 1",
        (repo, pr_number),
    )
    return str(row[0]) if row else None


def get_author_cache(db: Database, repo: str, author_login: str) -> AuthorCacheEntry | None:
    """The cached tier only while it is fresher than 24 h."""
    rows = db.query(
        "SELECT tier, author_association, pr_count, cached_at FROM author_cache "
        "WHERE repo = ? AND author_login = ? AND cached_at >= datetime('now', ?)",
        (repo, author_login, f"-{AUTHOR_CACHE_TTL_HOURS} hours"),
    )
    return AuthorCacheEntry(**dict(rows[0])) if rows else None


def upsert_author_cache(
    db: Database,
    *,
    repo: str,
    author_login: str,
    tier: str,
    author_association: str,
    pr_count: int | None,
) -> None:
    db.execute(
        "INSERT INTO author_cache (repo, author_login, tier, author_association, pr_count, cached_at) "
        "VALUES (?, ?, ?, ?, ?, datetime('now')) ON CONFLICT(repo, author_login) DO UPDATE SET "
        "tier = excluded.tier, author_association = excluded.author_association, "
        "pr_count = excluded.pr_count, cached_at = datetime('now')",
        (repo, author_login, tier, author_association, pr_count),
    )


__all__ = [
    "check_and_claim_run",
    "complete_run",
    "get_author_cache",
    "last_reviewed_head_sha",
    "purge_old_runs",
    "purge_stale_author_cache",
    "run_delivery",
    "run_key",
    "upsert_author_cache",
]
