"""A rollup read for a page's range (:mod:`kodiai.storage.rollups`): the range's whole days from the rollup,
its first (partial) day and the rows past the rollup's watermark (today's, a late or back-dated row) from the
source table — together exactly the source rows of the range, in one statement (one snapshot, so a fold
committed meanwhile is seen whole or not at all).

:func:`read_plain` is the same figures from the source rows alone: the definition the rollups must equal (the
tests compare the two)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any

from kodiai.dashboard.scope import Scope
from kodiai.storage.database import Executor
from kodiai.storage.rollups import DailyRollup, watermark

Row = tuple[Any, ...]


def first_full_day(scope: Scope) -> str:
    """The day after the range's first, partial day: the first day the rollup answers for."""
    return (date.fromisoformat(scope.since[:10]) + timedelta(days=1)).isoformat()


def read_daily(db: Executor, spec: DailyRollup, scope: Scope, keys: Sequence[str] | None = None) -> list[Row]:
    """``(day, *keys, *values)`` rows of the viewer's range, one per ``(day, *keys)`` (``keys``: a subset of
    the rollup's, default all), sorted."""
    first_full = first_full_day(scope)
    rsql, rparams = scope.repo_sql("repo")
    ssql, sparams = scope.repo_sql(spec.repo)
    mark = spec.watermark_sql
    hint = watermark(db, spec.state, spec.source)  # never above the statement's own: watermarks only grow
    parts = (
        f"SELECT {', '.join(spec.columns)} FROM {spec.table} WHERE day >= ?{rsql}"
        f" UNION ALL {spec.aggregate(f's.id <= {mark}{ssql}', rows='part')}"
        f" UNION ALL {spec.aggregate(f'{spec.at} >= ?{ssql}', rows='tail')}"
    )
    sql = (  # each MATERIALIZED by its own index: the tail by id, the first day by time (no planner walks a
        # repository's every row through an index that also holds the id)
        f"WITH tail AS MATERIALIZED (SELECT * FROM {spec.source} WHERE id > ? AND id > {mark}),"
        f" part AS MATERIALIZED (SELECT s.* FROM {spec.source} s{spec.joins} WHERE {spec.at} >= ? AND {spec.at} < ?)"
        f" {_summed(spec, keys, parts)}"
    )
    params = (hint, scope.since, first_full, first_full, *rparams, *sparams, scope.since, *sparams)
    return _typed(spec, keys, db.fetch_all(sql, params))


def read_plain(db: Executor, spec: DailyRollup, scope: Scope, keys: Sequence[str] | None = None) -> list[Row]:
    """The same rows summed from every source row of the range."""
    ssql, sparams = scope.repo_sql(spec.repo)
    sql = _summed(spec, keys, spec.aggregate(f"{spec.at} >= ?{ssql}"))
    return _typed(spec, keys, db.fetch_all(sql, (scope.since, *sparams)))


def _summed(spec: DailyRollup, keys: Sequence[str] | None, parts: str) -> str:
    group = ", ".join(["day", *(keys if keys is not None else (k for k, _ in spec.keys))])
    values = ", ".join(f"SUM({v})" for v, _ in spec.values)
    return f"SELECT {group}, {values} FROM ({parts}) u GROUP BY {group} ORDER BY {group}"


def _typed(spec: DailyRollup, keys: Sequence[str] | None, rows: Sequence[Sequence[Any]]) -> list[Row]:
    """Counts as ``int`` and sums as ``float`` (PostgreSQL answers a sum of integers as ``numeric``)."""
    width = 1 + (len(keys) if keys is not None else len(spec.keys))
    real = [name in spec.real for name, _ in spec.values]
    return [
        (
            *(str(v) for v in row[:width]),
            *(float(v or 0) if real[i] else int(v or 0) for i, v in enumerate(row[width:])),
        )
        for row in rows
    ]
