"""Overview: reviews, findings by severity, clean reviews, errors by class, model cost and duration, the
queue — read-only SQL over the knowledge, telemetry and jobs databases (one text for SQLite and PostgreSQL).

Each store's range is read once (reviews grouped by day and repository, the runs' rows, findings by
severity) and the page's figures are summed from those rows in :func:`summarise`, which is pure."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any, TypeVar, cast

from kodiai.dashboard.scope import Scope
from kodiai.dashboard.stats import percentile
from kodiai.dashboard.tables import Table
from kodiai.storage.database import Executor

T = TypeVar("T")
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


def overview(
    knowledge: Executor,
    telemetry: Executor,
    jobs: Executor | None,
    scope: Scope,
    cache: DayCache | None = None,
    today: date | None = None,
) -> Overview:
    """The page's figures. With ``cache``, the range's whole past days are read once for every repository
    and kept (a day that is over gets no new rows); only the range's first, partial day and today are read
    per request. The rows are the same, in the same order, so the figures are the uncached ones."""
    first_full = date.fromisoformat(scope.since[:10]) + timedelta(days=1)
    today = today or datetime.now(UTC).date()
    if cache is None or first_full >= today:
        reviews, severities, runs = _read(knowledge, telemetry, scope, scope.since, None)
    else:
        reviews, severities, runs = _read(knowledge, telemetry, scope, scope.since, first_full.isoformat())
        wanted = None if scope.repos is None else set(scope.repos)
        day = first_full
        while day < today:
            got = cache.get(f"overview:{day.isoformat()}", partial(_read_day, knowledge, telemetry, day))
            if wanted is None:
                reviews += got.reviews
                severities += got.severities
                runs += got.runs
            else:  # the figures do not depend on the rows' order (summarise)
                for repo in wanted:
                    reviews += got.by_repo.get(repo, ([], []))[0]
                    runs += got.by_repo.get(repo, ([], []))[1]
                severities += [(sev, n) for repo, sev, n in got.severities_by_repo if repo in wanted]
            day += timedelta(days=1)
        later = _read(knowledge, telemetry, scope, today.isoformat(), None)
        reviews, severities, runs = reviews + later[0], severities + later[1], runs + later[2]
    totals: dict[str, int] = {}
    for sev, n in severities:
        totals[str(sev)] = totals.get(str(sev), 0) + int(n)
    out = summarise(reviews, list(totals.items()), runs)
    out.queue = queue_depth(jobs, scope)
    return out


Rows = list[tuple[Any, ...]]


def _read(
    knowledge: Executor, telemetry: Executor, scope: Scope, since: str, until: str | None
) -> tuple[Rows, Rows, Rows]:
    """The viewer's reviews (grouped by day and repository), findings by severity and model runs with
    ``since <= created_at < until``."""
    repo_sql, repo_params = scope.repo_sql()
    end, end_params = (" AND created_at < ?", [until]) if until is not None else ("", [])
    reviews = knowledge.fetch_all(
        "WITH r AS MATERIALIZED (SELECT created_at, repo, findings_total, conclusion FROM reviews"
        f" WHERE created_at >= ?{end}{repo_sql})"
        " SELECT substr(created_at, 1, 10), repo, COUNT(*), COALESCE(SUM(findings_total), 0),"
        " SUM(CASE WHEN findings_total = 0 AND conclusion = 'success' THEN 1 ELSE 0 END)"
        " FROM r GROUP BY substr(created_at, 1, 10), repo",
        (since, *end_params, *repo_params),
    )
    if scope.repos is None:  # every repository: the findings' own (created_at, severity) index
        severities = knowledge.fetch_all(
            f"WITH f AS MATERIALIZED (SELECT severity FROM findings WHERE created_at >= ?{end})"
            " SELECT severity, COUNT(*) FROM f GROUP BY severity",
            (since, *end_params),
        )
    else:  # the viewer's repositories: their reviews in the range, then those reviews' findings
        rsql, rparams = scope.repo_sql("r.repo")
        rend = end.replace("created_at", "r.created_at")
        severities = knowledge.fetch_all(
            f"WITH r AS MATERIALIZED (SELECT r.id FROM reviews r WHERE r.created_at >= ?{rend}{rsql})"
            " SELECT f.severity, COUNT(*) FROM r JOIN findings f ON f.review_id = r.id GROUP BY f.severity",
            (since, *end_params, *rparams),
        )
    runs = telemetry.fetch_all(  # the range first (its covering index), then the viewer's repositories
        "WITH e AS MATERIALIZED (SELECT created_at, repo, duration_ms, cost_usd, conclusion FROM executions"
        f" WHERE created_at >= ?{end}) SELECT substr(created_at, 1, 10), repo, duration_ms, cost_usd, conclusion"
        f" FROM e WHERE 1 = 1{repo_sql}",
        (since, *end_params, *repo_params),
    )
    return list(reviews), list(severities), list(runs)


@dataclass(frozen=True)
class DayRows:
    """One whole past day of every repository: what :func:`overview` needs of it."""

    reviews: Rows
    severities: Rows
    """``(severity, n)`` of the findings created that day (the operator's form)."""
    severities_by_repo: Rows
    """``(repo, severity, n)`` of the findings of the reviews created that day (a viewer's form)."""
    runs: Rows
    by_repo: dict[str, tuple[Rows, Rows]] = field(default_factory=dict)
    """``repo → (its reviews rows, its runs rows)``: a viewer's repositories picked without a scan."""


def _read_day(knowledge: Executor, telemetry: Executor, day: date) -> DayRows:
    start, end = day.isoformat(), (day + timedelta(days=1)).isoformat()
    every = Scope(repos=None, installations=None, since=start, days=1)
    reviews, severities, runs = _read(knowledge, telemetry, every, start, end)
    by_repo = knowledge.fetch_all(
        "WITH r AS MATERIALIZED (SELECT r.id, r.repo FROM reviews r WHERE r.created_at >= ? AND r.created_at < ?)"
        " SELECT r.repo, f.severity, COUNT(*) FROM r JOIN findings f ON f.review_id = r.id"
        " GROUP BY r.repo, f.severity",
        (start, end),
    )
    split: dict[str, tuple[Rows, Rows]] = {}
    for row in reviews:
        split.setdefault(str(row[1]), ([], []))[0].append(row)
    for row in runs:
        split.setdefault(str(row[1]), ([], []))[1].append(row)
    return DayRows(reviews, severities, list(by_repo), runs, split)


class DayCache:
    """Whole past days' rows, shared by every viewer of this process and kept for ``seconds`` (a past day
    changes only when retention deletes its rows or an import back-dates some: this bounds how long such a
    change takes to show). Keys name the page's reading and the day (``overview:2026-01-31``)."""

    def __init__(self, seconds: float = 600.0, entries: int = 400) -> None:
        self._seconds = seconds
        self._max = entries
        self._rows: dict[str, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str, load: Callable[[], T]) -> T:
        now = time.monotonic()
        with self._lock:
            hit = self._rows.get(key)
        if hit is not None and now - hit[0] < self._seconds:
            return cast(T, hit[1])
        rows = load()
        with self._lock:
            self._rows[key] = (now, rows)
            if len(self._rows) > self._max:
                for old in sorted(self._rows, key=lambda k: self._rows[k][0])[: len(self._rows) - self._max]:
                    del self._rows[old]
        return rows


def whole_days(scope: Scope, today: date) -> tuple[date, list[date]]:
    """The day after the range's first (partial) day, and the whole days from it to yesterday."""
    first_full = date.fromisoformat(scope.since[:10]) + timedelta(days=1)
    return first_full, [first_full + timedelta(days=i) for i in range(max(0, (today - first_full).days))]


def summarise(
    reviews: Sequence[Sequence[Any]], severities: Sequence[Sequence[Any]], runs: Sequence[Sequence[Any]]
) -> Overview:
    """The page's figures from ``(day, repo, reviews, findings, clean)``, ``(severity, n)`` and the runs'
    ``(day, repo, duration_ms, cost_usd, conclusion)`` rows. Costs are summed exactly (:func:`math.fsum`),
    so the figures do not depend on the rows' order."""
    out = Overview()
    day_reviews: dict[str, int] = {}
    day_costs: dict[str, list[float]] = {}
    per_repo: dict[str, list[int]] = {}
    repo_costs: dict[str, list[float]] = {}
    for day, repo, n, found, clean in reviews:
        out.reviews += int(n)
        out.clean_reviews += int(clean or 0)
        day_reviews[str(day)] = day_reviews.get(str(day), 0) + int(n)
        agg = per_repo.setdefault(str(repo), [0, 0, 0, 0])
        agg[0] += int(n)
        agg[1] += int(found)
    out.findings = {s: 0 for s in SEVERITIES} | {str(s): int(n) for s, n in severities}
    durations, costs = [], []
    errors: dict[str, int] = {}
    for day, repo, duration, cost, conclusion in runs:
        durations.append(float(duration or 0))
        costs.append(float(cost or 0))
        day_costs.setdefault(str(day), []).append(float(cost or 0))
        agg = per_repo.setdefault(str(repo), [0, 0, 0, 0])
        agg[2] += 1
        repo_costs.setdefault(str(repo), []).append(float(cost or 0))
        if conclusion != "success":
            errors[str(conclusion)] = errors.get(str(conclusion), 0) + 1
            agg[3] += 1
    out.runs = len(runs)
    out.cost_usd = math.fsum(costs)
    out.duration_p50_ms, out.duration_p95_ms = percentile(durations, 50), percentile(durations, 95)
    out.cost_p50_usd, out.cost_p95_usd = percentile(costs, 50), percentile(costs, 95)
    out.errors = dict(sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])))
    out.daily = [
        (day, day_reviews.get(day, 0), math.fsum(day_costs.get(day, [])))
        for day in sorted({*day_reviews, *day_costs})
    ]
    out.by_repo = Table(
        "overview-by-repo",
        "By repository",
        ("repository", "reviews", "findings", "model_runs", "cost_usd", "failed_runs"),
        [
            (repo, a[0], a[1], a[2], math.fsum(repo_costs.get(repo, [])), a[3])
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
