"""Retrieval: the ``retrieval_quality`` rows of the range — retrievals per day by ``threshold_method``,
candidates against kept results, the confidence mix, empty results, and how often memory reached the
prompt (a retrieval with at least one kept result changed the review's prompt).

One read of the range's per-day rollup (per day and method; :mod:`kodiai.storage.rollups`); every figure is
summed from it in :func:`summarise`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kodiai.dashboard.queries_rollups import read_daily, read_plain
from kodiai.dashboard.scope import Scope
from kodiai.dashboard.stats import share
from kodiai.dashboard.tables import Table
from kodiai.storage.database import Executor
from kodiai.storage.rollups import RETRIEVALS


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


def retrieval_summary(telemetry: Executor, scope: Scope, *, rollups: bool = True) -> RetrievalSummary:
    """The page's figures (``rollups`` False: summed from every row of the range instead, the definition the
    rollup read must equal)."""
    read = read_daily if rollups else read_plain
    return summarise(read(telemetry, RETRIEVALS, scope, ("threshold_method",)))


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
