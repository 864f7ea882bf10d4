"""What each dashboard page shows: its figures, charts and tables for one viewer and scope (the routes
render them with the page's template, or export one of the tables)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from fastapi import Request

from kodiai.dashboard import charts
from kodiai.dashboard.auth import Viewer
from kodiai.dashboard.queries_jobs import recent_jobs
from kodiai.dashboard.queries_memory import memory_export, memory_quality
from kodiai.dashboard.queries_overview import overview
from kodiai.dashboard.queries_quiet import quiet_report
from kodiai.dashboard.queries_retrieval import retrieval_summary
from kodiai.dashboard.scope import Scope, hide_unseen
from kodiai.dashboard.state import DashboardState
from kodiai.dashboard.tables import Table

PageBuilder = Callable[[DashboardState, Viewer, Scope, Request], Awaitable[dict[str, Any]]]


def every_day(
    series: list[tuple[str, dict[str, int]]], scope: Scope, today: date | None = None
) -> list[tuple[str, dict[str, int]]]:
    """``series`` with a (zero) column for each day of the range it has no row for, so a chart's columns are
    calendar days (the tables beside it keep only the days with data)."""
    by_day = dict(series)
    first = date.fromisoformat(scope.since[:10])
    last = today or datetime.now(UTC).date()
    days = [(first + timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]
    return [(d, by_day.get(d, {})) for d in days]


async def overview_page(
    state: DashboardState, viewer: Viewer, scope: Scope, request: Request
) -> dict[str, Any]:
    src = state.sources
    got = await asyncio.to_thread(overview, src.knowledge, src.telemetry, src.jobs, scope)
    severity = Table(
        "overview-findings", "Findings by severity", ("severity", "findings"), list(got.findings.items())
    )
    errors = Table(
        "overview-errors", "Failed model runs by class", ("conclusion", "runs"), list(got.errors.items())
    )
    queue = Table("overview-queue", "Queue", ("status", "deliveries"), list(got.queue.items()))
    daily = Table("overview-daily", "Per day", ("day", "reviews", "cost_usd"), list(got.daily))
    return {
        "o": got,
        "tables": [got.by_repo, severity, errors, queue, daily],
        "severity_chart": charts.bar_chart(
            "sev", "Findings by severity", [(k, v) for k, v in got.findings.items()]
        ),
        "errors_chart": charts.bar_chart("err", "Failed model runs by class", list(got.errors.items())),
        "daily_chart": charts.stacked_columns(
            "daily",
            "Reviews per day",
            every_day([(d, {"reviews": n}) for d, n, _ in got.daily], scope),
            ["reviews"],
        ),
        "queue_chart": charts.bar_chart("queue", "Open deliveries by status", list(got.queue.items())),
    }


async def retrieval_page(
    state: DashboardState, viewer: Viewer, scope: Scope, request: Request
) -> dict[str, Any]:
    got = await asyncio.to_thread(retrieval_summary, state.sources.telemetry, scope)
    daily = Table(
        "retrieval-daily",
        "Retrievals per day by method",
        ("day", *got.methods),
        [(day, *(counts.get(m, 0) for m in got.methods)) for day, counts in got.daily],
    )
    return {
        "r": got,
        "tables": [got.by_method, daily],
        "method_chart": charts.stacked_columns(
            "rq", "Retrievals per day by cut method", every_day(got.daily, scope), got.methods
        ),
        "kept_chart": charts.bar_chart(
            "kept", "Candidates against kept", [("candidates", got.candidates), ("kept", got.kept)]
        ),
        "confidence_chart": charts.bar_chart(
            "conf", "Confidence of kept results", list(got.confidence.items())
        ),
    }


async def memory_page(
    state: DashboardState, viewer: Viewer, scope: Scope, request: Request
) -> dict[str, Any]:
    if request.path_params.get("table") == "memory-all":  # the export of every memory, on demand only
        every = await asyncio.to_thread(memory_export, state.sources.knowledge, scope)
        return {"tables": [every]}
    got = await asyncio.to_thread(memory_quality, state.sources.knowledge, scope)
    rollup = got.rollup
    return {
        "m": got,
        "tables": got.tables,
        "precision_chart": charts.bar_chart(
            "prec",
            "Precision per repository (%)",
            [(str(r[0]), round(100 * r[5], 1)) for r in rollup.rows if r[5] is not None],
            unit=" %",
        ),
    }


async def quiet_page(state: DashboardState, viewer: Viewer, scope: Scope, request: Request) -> dict[str, Any]:
    repo = request.query_params.get("repo", "").strip()
    try:
        number = int(request.query_params.get("pr", ""))
    except ValueError:
        number = 0
    if not repo or number <= 0 or not viewer.access.can_see(repo):
        return {"report": None, "tables": [], "pr": request.query_params.get("pr", "")}
    repo = scope.repos[0] if scope.repos else repo  # the viewer's spelling of the name
    report = await asyncio.to_thread(
        quiet_report, state.sources.knowledge, state.sources.telemetry, repo, number
    )
    report.hits = hide_unseen(report.hits, viewer.access, "source_repo", ("finding_id", "title"))
    return {"report": report, "tables": report.tables, "pr": number}


async def jobs_page(state: DashboardState, viewer: Viewer, scope: Scope, request: Request) -> dict[str, Any]:
    status = request.query_params.get("status") or None
    table = await asyncio.to_thread(recent_jobs, state.sources.jobs, scope, status=status)
    return {"jobs": table, "tables": [table], "status": status or ""}


PAGES: dict[str, PageBuilder] = {
    "overview": overview_page,
    "retrieval": retrieval_page,
    "memory": memory_page,
    "quiet": quiet_page,
    "jobs": jobs_page,
}
