"""Overview: reviews, findings by severity, clean reviews, errors by class, model cost and duration, the
queue — read-only SQL over the knowledge, telemetry and jobs databases (one text for SQLite and PostgreSQL).

Each store's range is read once (reviews grouped by day and repository, the runs' rows, findings by
severity) and the page's figures are summed from those rows in :func:`summarise`, which is pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

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
    repo_sql, repo_params = scope.repo_sql()
    reviews = knowledge.fetch_all(
        "WITH r AS MATERIALIZED (SELECT created_at, repo, findings_total, conclusion FROM reviews"
        f" WHERE created_at >= ?{repo_sql})"
        " SELECT substr(created_at, 1, 10), repo, COUNT(*), COALESCE(SUM(findings_total), 0),"
        " SUM(CASE WHEN findings_total = 0 AND conclusion = 'success' THEN 1 ELSE 0 END)"
        " FROM r GROUP BY substr(created_at, 1, 10), repo",
        (scope.since, *repo_params),
    )
    if scope.repos is None:  # every repository: the findings' own (created_at, severity) index
        severities = knowledge.fetch_all(
            "WITH f AS MATERIALIZED (SELECT severity FROM findings WHERE created_at >= ?)"
            " SELECT severity, COUNT(*) FROM f GROUP BY severity",
            (scope.since,),
        )
    else:  # the viewer's repositories: their reviews in the range, then those reviews' findings
        rsql, rparams = scope.repo_sql("r.repo")
        severities = knowledge.fetch_all(
            f"WITH r AS MATERIALIZED (SELECT r.id FROM reviews r WHERE r.created_at >= ?{rsql})"
            " SELECT f.severity, COUNT(*) FROM r JOIN findings f ON f.review_id = r.id GROUP BY f.severity",
            (scope.since, *rparams),
        )
    runs = telemetry.fetch_all(
        "SELECT substr(created_at, 1, 10), repo, duration_ms, cost_usd, conclusion FROM executions"
        f" WHERE created_at >= ?{repo_sql}",
        (scope.since, *repo_params),
    )
    out = summarise(reviews, severities, runs)
    out.queue = queue_depth(jobs, scope)
    return out


def summarise(
    reviews: Sequence[Sequence[Any]], severities: Sequence[Sequence[Any]], runs: Sequence[Sequence[Any]]
) -> Overview:
    """The page's figures from ``(day, repo, reviews, findings, clean)``, ``(severity, n)`` and the runs'
    ``(day, repo, duration_ms, cost_usd, conclusion)`` rows."""
    out = Overview()
    per_day: dict[str, list[float]] = {}
    per_repo: dict[str, list[float]] = {}
    for day, repo, n, found, clean in reviews:
        out.reviews += int(n)
        out.clean_reviews += int(clean or 0)
        per_day.setdefault(str(day), [0, 0.0])[0] += int(n)
        agg = per_repo.setdefault(str(repo), [0, 0, 0, 0.0, 0])
        agg[0] += int(n)
        agg[1] += int(found)
    out.findings = {s: 0 for s in SEVERITIES} | {str(s): int(n) for s, n in severities}
    durations, costs = [], []
    errors: dict[str, int] = {}
    for day, repo, duration, cost, conclusion in runs:
        durations.append(float(duration or 0))
        costs.append(float(cost or 0))
        per_day.setdefault(str(day), [0, 0.0])[1] += float(cost or 0)
        agg = per_repo.setdefault(str(repo), [0, 0, 0, 0.0, 0])
        agg[2] += 1
        agg[3] += float(cost or 0)
        if conclusion != "success":
            errors[str(conclusion)] = errors.get(str(conclusion), 0) + 1
            agg[4] += 1
    out.runs = len(runs)
    out.cost_usd = sum(costs)
    out.duration_p50_ms, out.duration_p95_ms = percentile(durations, 50), percentile(durations, 95)
    out.cost_p50_usd, out.cost_p95_usd = percentile(costs, 50), percentile(costs, 95)
    out.errors = dict(sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])))
    out.daily = [(day, int(v[0]), float(v[1])) for day, v in sorted(per_day.items())]
    out.by_repo = Table(
        "overview-by-repo",
        "By repository",
        ("repository", "reviews", "findings", "model_runs", "cost_usd", "failed_runs"),
        [
            (repo, int(a[0]), int(a[1]), int(a[2]), float(a[3]), int(a[4]))
            for repo, a in sorted(per_repo.items())
        ],
    )
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
