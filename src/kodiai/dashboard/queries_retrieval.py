"""Retrieval: the ``retrieval_quality`` rows of the range — retrievals per day by ``threshold_method``,
candidates against kept results, the confidence mix, empty results, and how often memory reached the
prompt (a retrieval with at least one kept result changed the review's prompt).

One grouped read of the range (per day and method); every figure is summed from it in :func:`summarise`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any

from kodiai.dashboard.queries_overview import DayCache, whole_days
from kodiai.dashboard.scope import Scope
from kodiai.dashboard.stats import share
from kodiai.dashboard.tables import Table
from kodiai.storage.database import Executor


@dataclass
class RetrievalSummary:
    retrievals: int = 0
    candidates: int = 0
    """Sum of ``candidate_count`` (the pools before the cut; rows that did not record it count 0)."""
    kept: int = 0
    """Sum of ``result_count``: memories that reached the prompt."""
    empty: int = 0
    with_memory: int = 0
    confidence: dict[str, int] = field(default_factory=dict)
    daily: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    """``(day, {threshold_method: retrievals})``; a NULL method (rows older than the column) is 'unknown'."""
    methods: list[str] = field(default_factory=list)
    by_method: Table = field(default_factory=lambda: Table("retrieval-by-method", "By cut method", ()))

    @property
    def memory_share(self) -> float | None:
        return share(self.with_memory, self.retrievals)


def retrieval_summary(
    telemetry: Executor, scope: Scope, cache: DayCache | None = None, today: date | None = None
) -> RetrievalSummary:
    """The page's figures. With ``cache``, the range's whole past days are read once for every repository
    and kept; only the first, partial day and today are read per request."""
    first_full, days = whole_days(scope, today or datetime.now(UTC).date())
    if cache is None or not days:
        return summarise(_combine(_rows(telemetry, scope, scope.since, None)))
    rows = _rows(telemetry, scope, scope.since, first_full.isoformat())
    wanted = None if scope.repos is None else set(scope.repos)
    for day in days:
        start, end = day.isoformat(), (day + timedelta(days=1)).isoformat()
        got = cache.get(f"retrieval:{start}", partial(_rows, telemetry, None, start, end))
        rows += got if wanted is None else [r for r in got if r[0] in wanted]
    rows += _rows(telemetry, scope, (days[-1] + timedelta(days=1)).isoformat(), None)
    return summarise(_combine(rows))


def _rows(telemetry: Executor, scope: Scope | None, since: str, until: str | None) -> list[tuple[Any, ...]]:
    """``(repo, day, method, n, candidates, kept, empty, high, medium, low, Σthreshold, n thresholds)`` of
    the retrievals with ``since <= created_at < until`` (``scope`` None: every repository)."""
    repo_sql, params = scope.repo_sql() if scope is not None else ("", [])
    end, end_params = (" AND created_at < ?", [until]) if until is not None else ("", [])
    return list(
        telemetry.fetch_all(
            # MATERIALIZED: both planners read the range through the created_at index, not a grouping index
            "WITH q AS MATERIALIZED (SELECT created_at, repo, threshold_method, candidate_count, result_count,"
            " confidence_high, confidence_medium, confidence_low, distance_threshold FROM retrieval_quality"
            f" WHERE created_at >= ?{end}{repo_sql})"
            " SELECT repo, substr(created_at, 1, 10), COALESCE(threshold_method, 'unknown'), COUNT(*),"
            " COALESCE(SUM(candidate_count), 0), COALESCE(SUM(result_count), 0),"
            " SUM(CASE WHEN result_count = 0 THEN 1 ELSE 0 END), COALESCE(SUM(confidence_high), 0),"
            " COALESCE(SUM(confidence_medium), 0), COALESCE(SUM(confidence_low), 0),"
            " COALESCE(SUM(distance_threshold), 0), COUNT(distance_threshold)"
            " FROM q GROUP BY repo, substr(created_at, 1, 10), COALESCE(threshold_method, 'unknown')",
            (since, *end_params, *params),
        )
    )


def _combine(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Per-repository rows summed per ``(day, method)`` (thresholds exactly, :func:`math.fsum`), in
    :func:`summarise`'s form, whatever order they came in."""
    ints: dict[tuple[str, str], list[int]] = {}
    sums: dict[tuple[str, str], list[float]] = {}
    for _repo, day, method, n, candidates, kept, empty, high, medium, low, thresholds, n_thr in rows:
        key = (str(day), str(method))
        agg = ints.setdefault(key, [0] * 8)
        for i, value in enumerate((n, candidates, kept, empty, high, medium, low, n_thr)):
            agg[i] += int(value or 0)
        sums.setdefault(key, []).append(float(thresholds or 0))
    return [
        (day, method, *ints[(day, method)][:7], math.fsum(sums[(day, method)]), ints[(day, method)][7])
        for day, method in sorted(ints)
    ]


def summarise(rows: Sequence[Sequence[Any]]) -> RetrievalSummary:
    """The figures from ``(day, method, n, candidates, kept, empty, high, medium, low, Σthreshold, n
    thresholds)`` rows."""
    out = RetrievalSummary()
    per_day: dict[str, dict[str, int]] = {}
    per_method: dict[str, list[float]] = {}
    confidence = [0, 0, 0]
    for day, method, n, candidates, kept, empty, high, medium, low, thresholds, n_thresholds in rows:
        out.retrievals += int(n)
        out.candidates += int(candidates)
        out.kept += int(kept)
        out.empty += int(empty)
        confidence = [confidence[0] + int(high), confidence[1] + int(medium), confidence[2] + int(low)]
        per_day.setdefault(str(day), {})[str(method)] = int(n)
        agg = per_method.setdefault(str(method), [0, 0, 0, 0, 0.0, 0])
        for i, value in enumerate((n, candidates, kept, empty, thresholds, n_thresholds)):
            agg[i] += value
    out.with_memory = out.retrievals - out.empty
    out.confidence = {"high": confidence[0], "medium": confidence[1], "low": confidence[2]}
    out.methods = sorted(per_method)
    out.daily = sorted(per_day.items())
    ordered = sorted(per_method.items(), key=lambda kv: (-kv[1][0], kv[0]))
    out.by_method = Table(
        "retrieval-by-method",
        "By cut method",
        ("threshold_method", "retrievals", "candidates", "kept", "empty", "avg_threshold"),
        [
            (m, int(a[0]), int(a[1]), int(a[2]), int(a[3]), (a[4] / a[5]) if a[5] else None)
            for m, a in ordered
        ],
    )
    return out
