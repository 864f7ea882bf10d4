"""Overview: reviews, findings by severity, clean reviews, errors by class, model cost and duration, the
queue — read-only SQL over the knowledge, telemetry and jobs databases (one text for SQLite and PostgreSQL).

Reviews, findings by severity and model runs are read from their per-day rollups
(:mod:`kodiai.storage.rollups`); the duration and cost percentiles, which no per-day sum can give, from the
runs' own values (one covering-index range). The page's figures are summed from those rows in
:func:`summarise`, which is pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kodiai.dashboard.queries_rollups import first_full_day, read_daily, read_plain
from kodiai.dashboard.scope import Scope
from kodiai.dashboard.stats import percentile_of
from kodiai.dashboard.tables import Table
from kodiai.storage.database import Executor
from kodiai.storage.rollups import FINDINGS, REVIEWS, RUNS, watermark
from kodiai.storage.rollups_packed import INT, REAL, RUN_VALUES

Floats = npt.NDArray[np.float64]
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
    knowledge: Executor, telemetry: Executor, jobs: Executor | None, scope: Scope, *, rollups: bool = True
) -> Overview:
    """The page's figures (``rollups`` False: summed from every row of the range instead, the definition the
    rollup reads must equal)."""
    read = read_daily if rollups else read_plain
    reviews = read(knowledge, REVIEWS, scope)
    severities = read(knowledge, FINDINGS, scope, ("severity",))
    runs = read(telemetry, RUNS, scope)
    durations, costs = run_values(telemetry, scope, rollups=rollups)
    out = summarise(reviews, severities, runs, durations, costs)
    out.queue = queue_depth(jobs, scope)
    return out


def run_values(telemetry: Executor, scope: Scope, *, rollups: bool = True) -> tuple[Floats, Floats]:
    """Every run's duration and cost in the range (the percentiles need the values themselves): the packed
    per-day values of the range's whole days (:mod:`kodiai.storage.rollups_packed`), the partial first day's
    and those past the watermark, in one statement (``rollups`` False: every run's row)."""
    repo_sql, params = scope.repo_sql()
    if not rollups:
        rows = telemetry.fetch_all(
            "WITH e AS MATERIALIZED (SELECT repo, duration_ms, cost_usd FROM executions WHERE created_at >= ?)"
            f" SELECT duration_ms, cost_usd FROM e WHERE 1 = 1{repo_sql}",
            (scope.since, *params),
        )
        return np.asarray([r[0] or 0 for r in rows], dtype=float), np.asarray(
            [r[1] or 0 for r in rows], dtype=float
        )
    first_full = first_full_day(scope)
    mark = RUNS.watermark_sql
    rows = telemetry.fetch_all(
        f"WITH tail AS MATERIALIZED (SELECT created_at, repo, duration_ms, cost_usd FROM executions"
        f" WHERE id > ? AND id > {mark}),"
        " part AS MATERIALIZED (SELECT id, repo, duration_ms, cost_usd FROM executions"
        " WHERE created_at >= ? AND created_at < ?)"
        f" SELECT durations, costs, NULL AS duration_ms, NULL AS cost_usd FROM {RUN_VALUES} WHERE day >= ?{repo_sql}"
        f" UNION ALL SELECT NULL, NULL, duration_ms, cost_usd FROM part WHERE id <= {mark}{repo_sql}"
        f" UNION ALL SELECT NULL, NULL, duration_ms, cost_usd FROM tail WHERE created_at >= ?{repo_sql}",
        (
            watermark(telemetry, RUNS.state, RUNS.source), scope.since, first_full, first_full, *params,
            *params, scope.since, *params,
        ),
    )  # fmt: skip
    durations = [np.frombuffer(bytes(r[0]), dtype=INT) for r in rows if r[0] is not None]
    costs = [np.frombuffer(bytes(r[1]), dtype=REAL) for r in rows if r[0] is not None]
    loose = [r for r in rows if r[0] is None]
    durations.append(np.asarray([r[2] or 0 for r in loose], dtype=INT))
    costs.append(np.asarray([r[3] or 0 for r in loose], dtype=REAL))
    return np.concatenate(durations).astype(float), np.concatenate(costs)


def summarise(
    reviews: Sequence[Sequence[Any]],
    severities: Sequence[Sequence[Any]],
    runs: Sequence[Sequence[Any]],
    durations: Floats,
    costs: Floats,
) -> Overview:
    """The page's figures from the rollups' ``(day, repo, reviews, findings, clean)``, ``(day, severity,
    findings)`` and ``(day, repo, conclusion, runs, cost)`` rows and the runs' durations and costs.
    Costs are summed exactly (:func:`math.fsum`), so the figures do not depend on the rows' order."""
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
    totals = {s: 0 for s in SEVERITIES}
    for _day, severity, n in severities:
        totals[str(severity)] = totals.get(str(severity), 0) + int(n)
    out.findings = totals
    errors: dict[str, int] = {}
    all_costs: list[float] = []
    for day, repo, conclusion, n, cost in runs:
        out.runs += int(n)
        all_costs.append(float(cost))
        day_costs.setdefault(str(day), []).append(float(cost))
        agg = per_repo.setdefault(str(repo), [0, 0, 0, 0])
        agg[2] += int(n)
        repo_costs.setdefault(str(repo), []).append(float(cost))
        if conclusion != "success":
            errors[str(conclusion)] = errors.get(str(conclusion), 0) + int(n)
            agg[3] += int(n)
    out.cost_usd = math.fsum(all_costs)
    out.duration_p50_ms, out.duration_p95_ms = percentile_of(durations, 50), percentile_of(durations, 95)
    out.cost_p50_usd, out.cost_p95_usd = percentile_of(costs, 50), percentile_of(costs, 95)
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
