"""Telemetry report queries (behaviour P7 usage report, plus the retrieval-quality report).

Pure SQL over a (read-only) connection, SQLite or PostgreSQL (:class:`kodiai.storage.database.Executor`, or a
raw :class:`sqlite3.Connection`); the CLI renders. Works on a file the original created whether or
not it has been upgraded: a column the file lacks (``threshold_method`` before the upgrade) reads as NULL,
and numeric columns that later additive migrations add to ``retrieval_quality`` are summed automatically.
The feedback columns (migration ``0101_retrieval_feedback``) also get their own fields, which keep rows
written before them apart as "unknown" instead of counting them as zero.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from kodiai.storage.database import Executor, as_executor

RETRIEVAL_BASE_COLUMNS = (
    "id",
    "created_at",
    "delivery_id",
    "repo",
    "pr_number",
    "event_type",
    "top_k",
    "distance_threshold",
    "result_count",
    "avg_distance",
    "language_match_ratio",
    "threshold_method",
)

FEEDBACK_COLUMNS = ("feedback_positive", "feedback_negative", "feedback_rejected")

_DAYS = re.compile(r"^(\d+)d$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


class SinceError(ValueError):
    """An unparseable ``--since`` value."""


def parse_usage_since(value: str, now: datetime) -> str:
    """``Nd`` → now − N days as UTC ``YYYY-MM-DD HH:MM:SS``; ``YYYY-MM-DD`` → that day at 00:00:00;
    ``YYYY-MM-DD[T ]HH:MM…`` → the text with ``T`` replaced by a space; anything else raises."""
    if m := _DAYS.match(value):
        moment = now.astimezone(UTC) - timedelta(days=int(m.group(1)))
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    if _DATE.match(value):
        return f"{value} 00:00:00"
    if _DATETIME.match(value):
        return value.replace("T", " ", 1)
    raise SinceError(f'Invalid --since format: "{value}". Use Nd (e.g., 7d) or YYYY-MM-DD')


def _where(since: str | None, repo: str | None) -> tuple[str, tuple[object, ...]]:
    clauses: list[str] = []
    params: list[object] = []
    if since is not None:
        clauses.append("created_at >= ?")
        params.append(since)
    if repo is not None:
        clauses.append("repo = ?")
        params.append(repo)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", tuple(params)


class UsageSummary(BaseModel):
    total_executions: int
    total_input_tokens: int
    total_output_tokens: int
    total_tokens: int
    total_cost: float


class RepoUsage(BaseModel):
    repo: str
    executions: int
    total_tokens: int
    total_cost: float
    avg_duration_ms: int


class CategoryUsage(BaseModel):
    category: Literal["review", "mention"]
    executions: int
    avg_duration_ms: int
    total_cost: float


class UsageReport(BaseModel):
    summary: UsageSummary
    top_repos: list[RepoUsage]
    duration_by_category: list[CategoryUsage]


def _round_half_up(value: float | None) -> int:
    """SQLite's ROUND() is half away from zero; durations are never negative."""
    return int(value + 0.5) if value is not None else 0


def usage_report(
    conn: sqlite3.Connection | Executor, since: str | None = None, repo: str | None = None
) -> UsageReport:
    """Executions, tokens (cache tokens excluded), cost and latency: overall, per repo, review vs mention."""
    db = as_executor(conn)
    where, params = _where(since, repo)
    totals = db.fetch_one(
        "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
        f"COALESCE(SUM(cost_usd), 0) FROM executions{where}",
        params,
    )
    assert totals is not None  # an aggregate without GROUP BY always has one row
    count, inp, out, cost = totals
    repos = [
        RepoUsage(
            repo=r, executions=n, total_tokens=t or 0, total_cost=c or 0.0, avg_duration_ms=_round_half_up(d)
        )
        for r, n, t, c, d in db.fetch_all(
            "SELECT repo, COUNT(*), SUM(input_tokens + output_tokens), SUM(cost_usd) AS total_cost, "
            f"AVG(duration_ms) FROM executions{where} GROUP BY repo ORDER BY total_cost DESC",
            params,
        )
    ]
    categories = [
        CategoryUsage(category=cat, executions=n, avg_duration_ms=_round_half_up(d), total_cost=c or 0.0)
        for cat, n, d, c in db.fetch_all(
            "SELECT CASE WHEN event_type LIKE 'pull_request.%' THEN 'review' ELSE 'mention' END AS category, "
            f"COUNT(*), AVG(duration_ms) AS avg_d, SUM(cost_usd) FROM executions{where} "
            "GROUP BY category ORDER BY avg_d DESC",
            params,
        )
    ]
    return UsageReport(
        summary=UsageSummary(
            total_executions=int(count),
            total_input_tokens=int(inp),
            total_output_tokens=int(out),
            total_tokens=int(inp) + int(out),
            total_cost=float(cost),
        ),
        top_repos=repos,
        duration_by_category=categories,
    )


class RetrievalGroup(BaseModel):
    """Aggregates of a set of ``retrieval_quality`` rows.

    ``avg_distance`` / ``avg_language_match_ratio`` average the per-row values over the rows that have one
    (rows with no results store NULL). ``extra`` / ``extra_avg`` sum / average (over non-NULL values) each
    numeric column that later migrations add (confidence and ambiguity counts, …).
    """

    key: str | None
    rows: int
    total_results: int
    avg_result_count: float
    zero_result_rows: int
    avg_distance: float | None
    avg_language_match_ratio: float | None
    avg_top_k: float | None
    avg_distance_threshold: float | None
    extra: dict[str, float] = {}
    extra_avg: dict[str, float | None] = {}
    feedback_positive: int | None = None
    """Retrieved memories (final results) whose finding had at least one human 👍, summed over the rows that
    recorded feedback; None when no row of the group did."""
    feedback_negative: int | None = None
    """… at least one human 👎."""
    feedback_rejected: int | None = None
    """… net-negative feedback (shown to the model as a finding not to repeat)."""
    feedback_rows: int = 0
    """Rows that recorded feedback counts."""
    feedback_unknown_rows: int = 0
    """Rows with NULL feedback columns (written before migration 0101, or by an older server): unknown, not 0."""


class RetrievalReport(BaseModel):
    since: str | None
    repo: str | None
    bucket: Literal["day", "week"]
    extra_columns: list[str]
    has_threshold_method: bool
    has_feedback: bool = False
    """Whether the file has the feedback columns (``kodiai db upgrade`` adds them)."""
    overall: RetrievalGroup
    by_threshold_method: list[RetrievalGroup]
    by_repo: list[RetrievalGroup]
    by_period: list[RetrievalGroup]


def _numeric_extra_columns(db: Executor) -> tuple[list[str], set[str]]:
    info = db.columns("retrieval_quality")
    names = {name for name, _ in info}
    extra = [
        name
        for name, kind in info
        if name not in RETRIEVAL_BASE_COLUMNS
        and any(t in kind.upper() for t in ("INT", "REAL", "FLOA", "DOUB", "NUM"))
    ]
    return extra, names


_FEEDBACK_KNOWN = " OR ".join(f"{c} IS NOT NULL" for c in FEEDBACK_COLUMNS)
_FEEDBACK_SQL = f", SUM(CASE WHEN {_FEEDBACK_KNOWN} THEN 1 ELSE 0 END)" + "".join(
    f", SUM({c})" for c in FEEDBACK_COLUMNS
)


class _Feedback(NamedTuple):
    positive: int | None
    negative: int | None
    rejected: int | None
    recorded: int


def _feedback(row: Sequence[Any], start: int | None) -> _Feedback:
    """The group's feedback counts from ``row[start:]``; sums stay None when no row recorded feedback (a
    faked 0 would read as "no retrieved memory carried feedback"). ``start`` None: the file lacks them."""
    if start is None or not row[start]:
        return _Feedback(None, None, None, 0)
    positive, negative, rejected = (int(v or 0) for v in row[start + 1 : start + 4])
    return _Feedback(positive, negative, rejected, int(row[start]))


def _groups(
    db: Executor,
    key_sql: str,
    where: str,
    params: tuple[object, ...],
    extra: list[str],
    has_feedback: bool = False,
) -> list[RetrievalGroup]:
    extra_sql = "".join(f', COALESCE(SUM("{c}"), 0), AVG("{c}")' for c in extra)
    feedback_sql = _FEEDBACK_SQL if has_feedback else ""
    rows = db.fetch_all(
        f"SELECT {key_sql} AS k, COUNT(*), COALESCE(SUM(result_count), 0), AVG(result_count), "
        "SUM(CASE WHEN result_count = 0 THEN 1 ELSE 0 END), AVG(avg_distance), AVG(language_match_ratio), "
        f"AVG(top_k), AVG(distance_threshold){extra_sql}{feedback_sql} FROM retrieval_quality{where} "
        "GROUP BY k ORDER BY k NULLS FIRST",  # SQLite's order; PostgreSQL's own puts NULL last
        params,
    )
    end = 9 + 2 * len(extra)
    groups: list[RetrievalGroup] = []
    for r in rows:
        fb = _feedback(r, end if has_feedback else None)
        groups.append(
            RetrievalGroup(
                key=None if r[0] is None else str(r[0]),
                rows=int(r[1]),
                total_results=int(r[2]),
                avg_result_count=float(r[3] or 0.0),
                zero_result_rows=int(r[4] or 0),
                avg_distance=r[5],
                avg_language_match_ratio=r[6],
                avg_top_k=r[7],
                avg_distance_threshold=r[8],
                extra={c: float(v) for c, v in zip(extra, r[9:end:2], strict=True)},
                extra_avg={c: v for c, v in zip(extra, r[10:end:2], strict=True)},
                feedback_positive=fb.positive,
                feedback_negative=fb.negative,
                feedback_rejected=fb.rejected,
                feedback_rows=fb.recorded,
                feedback_unknown_rows=int(r[1]) - fb.recorded,
            )
        )
    return groups


def retrieval_report(
    conn: sqlite3.Connection | Executor,
    since: str | None = None,
    repo: str | None = None,
    bucket: Literal["day", "week"] = "day",
) -> RetrievalReport:
    """Rows, result counts, average distance, language-match ratio and the feedback the results carried,
    split by threshold method, per repo and per day or per week (``YYYY-Www``: SQLite's ``%W``, weeks
    starting on Monday, week 00 before the first)."""
    db = as_executor(conn)
    extra, names = _numeric_extra_columns(db)
    where, params = _where(since, repo)
    has_method = "threshold_method" in names
    method_sql = "threshold_method" if has_method else "NULL"
    period_sql = "date(created_at)" if bucket == "day" else "strftime('%Y-W%W', created_at)"
    fb = all(c in names for c in FEEDBACK_COLUMNS)
    overall = _groups(db, "'all'", where, params, extra, fb)
    empty = RetrievalGroup(
        key="all",
        rows=0,
        total_results=0,
        avg_result_count=0.0,
        zero_result_rows=0,
        avg_distance=None,
        avg_language_match_ratio=None,
        avg_top_k=None,
        avg_distance_threshold=None,
        extra=dict.fromkeys(extra, 0.0),
        extra_avg=dict.fromkeys(extra),
    )
    return RetrievalReport(
        since=since,
        repo=repo,
        bucket=bucket,
        extra_columns=extra,
        has_threshold_method=has_method,
        has_feedback=fb,
        overall=overall[0] if overall else empty,
        by_threshold_method=_groups(db, method_sql, where, params, extra, fb),
        by_repo=_groups(db, "repo", where, params, extra, fb),
        by_period=_groups(db, period_sql, where, params, extra, fb),
    )
