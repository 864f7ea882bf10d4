"""`kodiai telemetry ...`: the original's operator reports (stats, trends, usage) and the retrieval report.

Every report opens its database read-only (never creates or migrates it), works on a file the original
created, prints rich tables, and prints JSON with ``--json``. With ``DATABASE_URL`` set (and no ``--db`` on
the command line) the reports read the telemetry and knowledge tables in that PostgreSQL database.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table

from kodiai.compat.js import js_parse_int
from kodiai.storage import knowledge_reports as kr
from kodiai.storage import telemetry_reports as tr
from kodiai.storage.connection import connect
from kodiai.storage.database import Database, is_postgres_url, safe_url
from kodiai.storage.db_path import DEFAULT_TELEMETRY_DB_PATH, resolve_knowledge_db_path
from kodiai.storage.opening import open_postgres

app = typer.Typer(help="Operator reports over the telemetry and knowledge databases.", no_args_is_help=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
RepoOpt = Annotated[str | None, typer.Option("--repo", help="Only this repository (owner/name).")]
TelemetryDbOpt = Annotated[
    str,
    typer.Option(
        "--db", envvar="TELEMETRY_DB_PATH", help="Telemetry DB (default ./data/kodiai-telemetry.db)."
    ),
]
KnowledgeDbOpt = Annotated[
    str | None,
    typer.Option("--db", help="Knowledge DB (default: KNOWLEDGE_DB_PATH, else ./data/kodiai-knowledge.db)."),
]


def _console() -> Console:
    return Console(width=120, soft_wrap=False, highlight=False)


def _fail(message: str) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(1)


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2))


def _database_url(ctx: typer.Context) -> str | None:
    """``DATABASE_URL`` unless ``--db`` names a file on the command line: the server writes the telemetry
    and knowledge stores there, so the reports read them there."""
    url = os.environ.get("DATABASE_URL", "").strip()
    source = ctx.get_parameter_source("db")
    if not url or (source is not None and source.name == "COMMANDLINE"):
        return None
    return url


def _open_postgres(url: str, name: str, table: str) -> Database:
    if not is_postgres_url(url):
        raise _fail("DATABASE_URL: must be a postgresql://user:password@host:port/database URL")
    try:
        db = open_postgres(url, name)
    except ConnectionError as exc:  # names host and database only
        raise _fail(f"DATABASE_URL: {exc}") from None
    if not db.columns(table):
        db.close()
        raise _fail(
            f"No {name} tables in {safe_url(url)}. Has the Kodiai server been started with DATABASE_URL? "
            "(`kodiai db upgrade` creates them.)"
        )
    return db


def _open_telemetry(ctx: typer.Context, db: str) -> sqlite3.Connection | Database:
    url = _database_url(ctx)
    if url is not None:
        return _open_postgres(url, "telemetry", "executions")
    path = Path(db).resolve()
    if not path.is_file():
        raise _fail(
            f"Database not found at {path}. Has the Kodiai server been started? Use --db to specify a custom path."
        )
    return connect(path, read_only=True)


def _open_knowledge(ctx: typer.Context, db: str | None) -> sqlite3.Connection | Database:
    url = _database_url(ctx)
    if url is not None:
        return _open_postgres(url, "knowledge", "reviews")
    path, source = resolve_knowledge_db_path(db, os.environ)
    if not Path(path).is_file():
        via = {"arg": "--db", "env": "KNOWLEDGE_DB_PATH", "default": f"default ({kr.DEFAULT_DB_HINT})"}[
            source
        ]
        raise _fail(
            f"No knowledge store found at {path}\nResolved via: {via}\n"
            "  kodiai telemetry stats --repo owner/name --db /path/to/kodiai-knowledge.db\n"
            "  KNOWLEDGE_DB_PATH=/path/to/kodiai-knowledge.db kodiai telemetry stats --repo owner/name"
        )
    return connect(path, read_only=True)


def _require_repo(repo: str | None, command: str) -> str:
    """The original scripts: a missing ``--repo`` prints "--repo is required" and the usage, exit 1."""
    if not repo:
        raise _fail(f"--repo is required\nUsage: kodiai telemetry {command} --repo owner/name [options]")
    return repo


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _duration(ms: int) -> str:
    return f"{ms}ms" if ms < 1000 else f"{ms / 1000:.1f}s"


@app.command()
def stats(
    ctx: typer.Context,
    repo: Annotated[str | None, typer.Option("--repo", help="Repository (owner/name); required.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Nd (e.g. 30d) or an ISO date.")] = None,
    as_json: JsonOpt = False,
    db: KnowledgeDbOpt = None,
) -> None:
    """How has Kodiai reviewed a repository (optionally since a date)? (knowledge DB)"""
    repo = _require_repo(repo, "stats")
    try:
        cutoff = kr.parse_stats_since(since, datetime.now(UTC)) if since else None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    conn = _open_knowledge(ctx, db)
    try:
        result = kr.repo_stats(conn, repo, cutoff)
        has_details = kr.has_severity_rows(conn, repo, cutoff)
    finally:
        conn.close()
    if result.total_reviews == 0:
        typer.echo(f"No reviews found for {repo}")
        return
    if as_json:
        _print_json(
            {
                "repo": repo,
                "since": since,
                "totalReviews": result.total_reviews,
                "totalFindings": result.total_findings,
                "totalSuppressed": result.total_suppressed,
                "avgFindingsPerReview": result.avg_findings_per_review,
                "avgConfidence": result.avg_confidence,
                "severity": result.findings_by_severity,
                "topFiles": [{"path": f.path, "findingCount": f.finding_count} for f in result.top_files],
            }
        )
        return
    out = _console()
    out.print(f"Kodiai Review Stats: {repo}\n" + "=" * 42)
    out.print(f"Period: {since or 'All time'}")
    out.print(f"Reviews: {result.total_reviews}")
    out.print(f"Total Findings: {result.total_findings} ({result.total_suppressed} suppressed)")
    out.print(f"Avg Findings/PR: {result.avg_findings_per_review:.1f}")
    out.print(f"Avg Confidence: {round(result.avg_confidence)}%")
    if not has_details:
        out.print("No finding details recorded yet")
        return
    sev = Table(title="By Severity")
    sev.add_column("Severity")
    sev.add_column("Findings", justify="right")
    for name, count in result.findings_by_severity.items():
        sev.add_row(name, str(count))
    files = Table(title="Top Files")
    files.add_column("Path")
    files.add_column("Findings", justify="right")
    for f in result.top_files:
        files.add_row(f.path, str(f.finding_count))
    out.print(sev, files)


@app.command()
def trends(
    ctx: typer.Context,
    repo: Annotated[str | None, typer.Option("--repo", help="Repository (owner/name); required.")] = None,
    days: Annotated[str, typer.Option("--days", help="Window in days (positive integer).")] = "30",
    as_json: JsonOpt = False,
    db: KnowledgeDbOpt = None,
) -> None:
    """Daily reviews, findings, suppressions and confidence over the last N days (knowledge DB)."""
    repo = _require_repo(repo, "trends")
    parsed = js_parse_int(days)
    if not isinstance(parsed, int) or parsed <= 0:
        raise _fail("--days must be a positive integer")
    conn = _open_knowledge(ctx, db)
    try:
        rows = kr.repo_trends(conn, repo, parsed, descending=True)
    finally:
        conn.close()
    if not rows:
        typer.echo(f"No reviews found for {repo} in the last {parsed} days")
        return
    if as_json:
        _print_json(
            [
                {
                    "date": r.date,
                    "reviewCount": r.review_count,
                    "findingsCount": r.findings_count,
                    "suppressionsCount": r.suppressions_count,
                    "avgConfidence": r.avg_confidence,
                }
                for r in rows
            ]
        )
        return
    table = Table(title=f"Kodiai Review Trends: {repo} (last {parsed} days)")
    for name in ("Date", "Reviews", "Findings", "Suppressed", "Avg Confidence"):
        table.add_column(name, justify="left" if name == "Date" else "right")
    for r in rows:
        table.add_row(
            r.date,
            str(r.review_count),
            str(r.findings_count),
            str(r.suppressions_count),
            f"{round(r.avg_confidence)}%",
        )
    _console().print(table)


def _usage_csv(report: tr.UsageReport) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    s = report.summary
    w.writerow(["section", "metric", "value"])
    for metric, value in (
        ("totalExecutions", s.total_executions),
        ("totalInputTokens", s.total_input_tokens),
        ("totalOutputTokens", s.total_output_tokens),
        ("totalTokens", s.total_tokens),
        ("totalCost", s.total_cost),
    ):
        w.writerow(["summary", metric, value])
    buf.write("\nrepo,executions,total_tokens,total_cost,avg_duration_ms\n")
    for r in report.top_repos:
        buf.write(f'"{r.repo}",{r.executions},{r.total_tokens},{r.total_cost},{r.avg_duration_ms}\n')
    buf.write("\ncategory,executions,avg_duration_ms,total_cost\n")
    for c in report.duration_by_category:
        buf.write(f"{c.category},{c.executions},{c.avg_duration_ms},{c.total_cost}\n")
    return buf.getvalue()


@app.command()
def usage(
    ctx: typer.Context,
    since: Annotated[str | None, typer.Option("--since", help="Nd (e.g. 7d) or YYYY-MM-DD[ HH:MM].")] = None,
    repo: RepoOpt = None,
    as_json: JsonOpt = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV.")] = False,
    db: TelemetryDbOpt = DEFAULT_TELEMETRY_DB_PATH,
) -> None:
    """Executions, tokens, cost and latency: overall, per repo, review vs mention (telemetry DB)."""
    now = datetime.now(UTC)
    try:
        cutoff = tr.parse_usage_since(since, now) if since else None
    except tr.SinceError as exc:
        raise _fail(str(exc)) from None
    conn = _open_telemetry(ctx, db)
    try:
        report = tr.usage_report(conn, cutoff, repo)
    finally:
        conn.close()
    if as_json:
        s = report.summary
        _print_json(
            {
                "generated": now.isoformat().replace("+00:00", "Z"),
                "filters": {"since": cutoff, "repo": repo},
                "summary": {
                    "totalExecutions": s.total_executions,
                    "totalInputTokens": s.total_input_tokens,
                    "totalOutputTokens": s.total_output_tokens,
                    "totalTokens": s.total_tokens,
                    "totalCost": s.total_cost,
                },
                "topRepos": [r.model_dump() for r in report.top_repos],
                "durationByCategory": [c.model_dump() for c in report.duration_by_category],
            }
        )
        return
    if as_csv:
        typer.echo(_usage_csv(report), nl=False)
        return
    out = _console()
    out.print("Kodiai Usage Report\n" + "=" * 65)
    filters = ([f"since {cutoff}"] if cutoff else []) + ([f"repo {repo}"] if repo else [])
    out.print("Filters: " + (", ".join(filters) if filters else "none"))
    if report.summary.total_executions == 0:
        out.print("No executions found." + ("\nTry adjusting the filters above." if filters else ""))
        return
    s = report.summary
    out.print(
        f"Executions: {s.total_executions:,}\nInput tokens: {s.total_input_tokens:,}\n"
        f"Output tokens: {s.total_output_tokens:,}\nTotal tokens: {s.total_tokens:,}\nTotal cost: ${s.total_cost:.4f}"
    )
    repos = Table(title="Top Repos by Cost")
    for name in ("Repo", "Runs", "Tokens", "Cost", "Avg Duration"):
        repos.add_column(name, justify="left" if name == "Repo" else "right")
    for r in report.top_repos:
        repos.add_row(
            r.repo,
            str(r.executions),
            f"{r.total_tokens:,}",
            f"${r.total_cost:.4f}",
            _duration(r.avg_duration_ms),
        )
    cats = Table(title="Duration by Event Type")
    for name in ("Type", "Runs", "Avg Duration", "Cost"):
        cats.add_column(name, justify="left" if name == "Type" else "right")
    for c in report.duration_by_category:
        cats.add_row(c.category, str(c.executions), _duration(c.avg_duration_ms), f"${c.total_cost:.4f}")
    out.print(repos, cats)


def _retrieval_table(title: str, key_name: str, groups: list[tr.RetrievalGroup]) -> Table:
    table = Table(title=title)
    for name in (key_name, "Rows", "Results", "Avg Results", "Zero-result", "Avg Distance", "Lang Match"):
        table.add_column(name, justify="left" if name == key_name else "right")
    for g in groups:
        table.add_row(
            g.key if g.key is not None else "(not recorded)",
            str(g.rows),
            str(g.total_results),
            _num(g.avg_result_count, 2),
            str(g.zero_result_rows),
            _num(g.avg_distance),
            _num(g.avg_language_match_ratio),
        )
    return table


def _extra_table(title: str, key_name: str, groups: list[tr.RetrievalGroup], extra: list[str]) -> Table:
    """Columns added by later migrations (e.g. confidence counts): sum and average per group."""
    table = Table(title=f"{title}: added columns (sum / avg)")
    table.add_column(key_name)
    for name in extra:
        table.add_column(name, justify="right")
    for g in groups:
        cells = [f"{g.extra[c]:g} / {_num(g.extra_avg.get(c), 2)}" for c in extra]
        table.add_row(g.key if g.key is not None else "(not recorded)", *cells)
    return table


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def _feedback_table(groups: list[tuple[str, tr.RetrievalGroup]]) -> Table:
    """Per repo: how many retrieved memories carried human feedback (the learning loop at work)."""
    table = Table(title="Feedback carried by retrieved memories, by repository")
    for name in ("Repo", "Results", "👍 positive", "👎 negative", "Rejected (net 👎)", "Rows unknown*"):
        table.add_column(name, justify="left" if name == "Repo" else "right")
    for label, g in groups:
        table.add_row(
            label,
            str(g.total_results),
            _count(g.feedback_positive),
            _count(g.feedback_negative),
            _count(g.feedback_rejected),
            f"{g.feedback_unknown_rows} of {g.rows}",
        )
    return table


FEEDBACK_FOOTNOTE = (
    "* rows written before the feedback columns existed (NULL): their feedback is unknown, not counted.\n"
    "  '?' = no row of the repo recorded feedback."
)


@app.command()
def retrieval(
    ctx: typer.Context,
    since: Annotated[str | None, typer.Option("--since", help="Nd (e.g. 7d) or YYYY-MM-DD[ HH:MM].")] = None,
    repo: RepoOpt = None,
    by: Annotated[str, typer.Option("--by", help="Time bucket: day or week.")] = "day",
    as_json: JsonOpt = False,
    db: TelemetryDbOpt = DEFAULT_TELEMETRY_DB_PATH,
) -> None:
    """Retrieval quality: rows, result counts, distance, language match, by threshold method / repo / time;
    and per repo, how many retrieved memories carried positive, negative or net-negative human feedback."""
    if by not in ("day", "week"):
        raise _fail(f"--by must be day or week, got {by!r}")
    bucket: Literal["day", "week"] = "day" if by == "day" else "week"
    try:
        cutoff = tr.parse_usage_since(since, datetime.now(UTC)) if since else None
    except tr.SinceError as exc:
        raise _fail(str(exc)) from None
    conn = _open_telemetry(ctx, db)
    try:
        report = tr.retrieval_report(conn, cutoff, repo, bucket)
    finally:
        conn.close()
    if as_json:
        _print_json(report.model_dump())
        return
    out = _console()
    out.print("Kodiai Retrieval Quality Report\n" + "=" * 65)
    if report.overall.rows == 0:
        out.print("No retrieval_quality rows found.")
        return
    if not report.has_threshold_method:
        out.print("Note: this database predates threshold_method; run `kodiai db upgrade`.")
    sections = [
        ("Overall", "Scope", [report.overall]),
        ("By threshold method", "Method", report.by_threshold_method),
        ("By repository", "Repo", report.by_repo),
        (f"By {bucket}", bucket.capitalize(), report.by_period),
    ]
    extra = [c for c in report.extra_columns if c not in tr.FEEDBACK_COLUMNS]  # they get their own table
    for title, key_name, groups in sections:
        out.print(_retrieval_table(title, key_name, groups))
        if extra:
            out.print(_extra_table(title, key_name, groups, extra))
    if not report.has_feedback:
        out.print("Note: this database predates the feedback columns; run `kodiai db upgrade`.")
        return
    rows = [("(all)", report.overall), *((g.key or "(not recorded)", g) for g in report.by_repo)]
    out.print(_feedback_table(rows))
    out.print(FEEDBACK_FOOTNOTE)
