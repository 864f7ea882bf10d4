"""Retrieval: the ``retrieval_quality`` rows of the range — retrievals per day by ``threshold_method``,
candidates against kept results, the confidence mix, empty results, and how often memory reached the
prompt (a retrieval with at least one kept result changed the review's prompt)."""

from __future__ import annotations

from dataclasses import dataclass, field

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


def retrieval_summary(telemetry: Executor, scope: Scope) -> RetrievalSummary:
    out = RetrievalSummary()
    repo_sql, params = scope.repo_sql()
    where = f"WHERE created_at >= ?{repo_sql}"
    row = telemetry.fetch_one(
        "SELECT COUNT(*), COALESCE(SUM(candidate_count), 0), COALESCE(SUM(result_count), 0),"
        " COALESCE(SUM(CASE WHEN result_count = 0 THEN 1 ELSE 0 END), 0),"
        " COALESCE(SUM(confidence_high), 0), COALESCE(SUM(confidence_medium), 0),"
        f" COALESCE(SUM(confidence_low), 0) FROM retrieval_quality {where}",
        (scope.since, *params),
    )
    if row:
        out.retrievals, out.candidates, out.kept, out.empty = (int(v) for v in row[:4])
        out.with_memory = out.retrievals - out.empty
        out.confidence = {"high": int(row[4]), "medium": int(row[5]), "low": int(row[6])}
    per_day: dict[str, dict[str, int]] = {}
    methods: set[str] = set()
    for day, method, n in telemetry.fetch_all(
        "SELECT substr(created_at, 1, 10), COALESCE(threshold_method, 'unknown'), COUNT(*)"
        f" FROM retrieval_quality {where} GROUP BY substr(created_at, 1, 10), COALESCE(threshold_method, 'unknown')",
        (scope.since, *params),
    ):
        per_day.setdefault(str(day), {})[str(method)] = int(n)
        methods.add(str(method))
    out.methods = sorted(methods)
    out.daily = sorted(per_day.items())
    rows = telemetry.fetch_all(
        "SELECT COALESCE(threshold_method, 'unknown'), COUNT(*), COALESCE(SUM(candidate_count), 0),"
        " COALESCE(SUM(result_count), 0), COALESCE(SUM(CASE WHEN result_count = 0 THEN 1 ELSE 0 END), 0),"
        " AVG(distance_threshold)"
        f" FROM retrieval_quality {where} GROUP BY COALESCE(threshold_method, 'unknown')"
        " ORDER BY COUNT(*) DESC, COALESCE(threshold_method, 'unknown')",
        (scope.since, *params),
    )
    out.by_method = Table(
        "retrieval-by-method",
        "By cut method",
        ("threshold_method", "retrievals", "candidates", "kept", "empty", "avg_threshold"),
        [
            (str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), None if r[5] is None else float(r[5]))
            for r in rows
        ],
    )
    return out
