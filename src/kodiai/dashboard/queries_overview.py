"""Overview: reviews, findings by severity, clean reviews, errors by class, model cost and duration, the
queue — read-only SQL over the knowledge, telemetry and jobs databases (one text for SQLite and PostgreSQL)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kodiai.dashboard.scope import Scope
from kodiai.dashboard.stats import percentile
from kodiai.dashboard.tables import Table
from kodiai.storage.database import Executor

SEVERITIES = ("critical", "major", "medium", "minor")
OPEN_STATES = ("pending", "running", "requeued", "dead")


@dataclass
class Overview:
    reviews: int = 0
    clean_reviews: int = 0
    """Reviews that succeeded with no finding (approved when the repository's review.autoApprove is on)."""
    findings: dict[str, int] = field(default_factory=dict)
    runs: int = 0
    cost_usd: float = 0.0
    duration_p50_ms: float | None = None
    duration_p95_ms: float | None = None
    cost_p50_usd: float | None = None
    cost_p95_usd: float | None = None
    errors: dict[str, int] = field(default_factory=dict)
    """Model runs that did not succeed, by ``executions.conclusion``."""
    queue: dict[str, int] = field(default_factory=dict)
    """Open job-journal rows by status (``dead``: waiting for a retry)."""
    daily: list[tuple[str, int, float]] = field(default_factory=list)
    """``(day, reviews, model cost)`` per UTC day of the range."""
    by_repo: Table = field(default_factory=lambda: Table("overview-by-repo", "By repository", ()))


def overview(knowledge: Executor, telemetry: Executor, jobs: Executor | None, scope: Scope) -> Overview:
    out = Overview()
    repo_sql, repo_params = scope.repo_sql("repo")
    row = knowledge.fetch_one(
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN findings_total = 0 AND conclusion = 'success' THEN 1 ELSE 0 END), 0)"
        f" FROM reviews WHERE created_at >= ?{repo_sql}",
        (scope.since, *repo_params),
    )
    out.reviews, out.clean_reviews = (int(row[0]), int(row[1])) if row else (0, 0)
    rsql, rparams = scope.repo_sql("r.repo")
    out.findings = {s: 0 for s in SEVERITIES}
    for severity, n in knowledge.fetch_all(
        "SELECT f.severity, COUNT(*) FROM findings f JOIN reviews r ON r.id = f.review_id"
        f" WHERE r.created_at >= ?{rsql} GROUP BY f.severity ORDER BY f.severity",
        (scope.since, *rparams),
    ):
        out.findings[str(severity)] = int(n)
    runs = telemetry.fetch_all(
        f"SELECT duration_ms, cost_usd, conclusion FROM executions WHERE created_at >= ?{repo_sql}",
        (scope.since, *repo_params),
    )
    out.runs = len(runs)
    out.cost_usd = sum(float(r[1] or 0) for r in runs)
    out.duration_p50_ms = percentile([float(r[0] or 0) for r in runs], 50)
    out.duration_p95_ms = percentile([float(r[0] or 0) for r in runs], 95)
    out.cost_p50_usd = percentile([float(r[1] or 0) for r in runs], 50)
    out.cost_p95_usd = percentile([float(r[1] or 0) for r in runs], 95)
    errors: dict[str, int] = {}
    for r in runs:
        if r[2] != "success":
            errors[str(r[2])] = errors.get(str(r[2]), 0) + 1
    out.errors = dict(sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])))
    out.queue = queue_depth(jobs, scope)
    out.daily = _daily(knowledge, telemetry, scope)
    out.by_repo = _by_repo(knowledge, telemetry, scope)
    return out


def queue_depth(jobs: Executor | None, scope: Scope) -> dict[str, int]:
    counts = {s: 0 for s in OPEN_STATES}
    if jobs is None:
        return counts
    isql, iparams = scope.installation_sql()
    marks = ", ".join("?" for _ in OPEN_STATES)
    for status, n in jobs.fetch_all(
        f"SELECT status, COUNT(*) FROM delivery_journal WHERE status IN ({marks}){isql} GROUP BY status",
        (*OPEN_STATES, *iparams),
    ):
        counts[str(status)] = int(n)
    return counts


def _daily(knowledge: Executor, telemetry: Executor, scope: Scope) -> list[tuple[str, int, float]]:
    repo_sql, repo_params = scope.repo_sql()
    reviews = dict(
        knowledge.fetch_all(
            f"SELECT substr(created_at, 1, 10), COUNT(*) FROM reviews WHERE created_at >= ?{repo_sql}"
            " GROUP BY substr(created_at, 1, 10)",
            (scope.since, *repo_params),
        )
    )
    cost = dict(
        telemetry.fetch_all(
            f"SELECT substr(created_at, 1, 10), SUM(cost_usd) FROM executions WHERE created_at >= ?{repo_sql}"
            " GROUP BY substr(created_at, 1, 10)",
            (scope.since, *repo_params),
        )
    )
    days = sorted(set(reviews) | set(cost))
    return [(str(d), int(reviews.get(d, 0)), float(cost.get(d) or 0)) for d in days]


def _by_repo(knowledge: Executor, telemetry: Executor, scope: Scope) -> Table:
    repo_sql, repo_params = scope.repo_sql()
    reviews = {
        str(r[0]): (int(r[1]), int(r[2]))
        for r in knowledge.fetch_all(
            "SELECT repo, COUNT(*), COALESCE(SUM(findings_total), 0) FROM reviews"
            f" WHERE created_at >= ?{repo_sql} GROUP BY repo",
            (scope.since, *repo_params),
        )
    }
    runs = {
        str(r[0]): (int(r[1]), float(r[2] or 0), int(r[3]))
        for r in telemetry.fetch_all(
            "SELECT repo, COUNT(*), SUM(cost_usd), SUM(CASE WHEN conclusion = 'success' THEN 0 ELSE 1 END)"
            f" FROM executions WHERE created_at >= ?{repo_sql} GROUP BY repo",
            (scope.since, *repo_params),
        )
    }
    rows = [
        (repo, *reviews.get(repo, (0, 0)), *runs.get(repo, (0, 0.0, 0)))
        for repo in sorted(set(reviews) | set(runs))
    ]
    return Table(
        "overview-by-repo",
        "By repository",
        ("repository", "reviews", "findings", "model_runs", "cost_usd", "failed_runs"),
        rows,
    )
