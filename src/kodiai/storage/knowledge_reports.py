"""Read-only knowledge queries shared by the store and the operator reports (``kodiai telemetry stats|trends``).

Each function takes a plain :class:`sqlite3.Connection` (the CLI's read-only one) or any
:class:`~kodiai.storage.database.Executor` (the store's database, SQLite or PostgreSQL). SQL follows
behaviour P6.2 and P7, written to run on both.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta

from kodiai.storage.database import Executor, as_executor
from kodiai.storage.knowledge_models import FeedbackPattern, RepoStats, TopFile, TrendRow
from kodiai.text.fingerprint import fingerprint_finding_title

SEVERITIES = ("critical", "major", "medium", "minor")
DEFAULT_DB_HINT = "./data/kodiai-knowledge.db"


_DAYS = re.compile(r"^(\d+)d$")


def parse_stats_since(value: str, now: datetime) -> str:
    """``--since`` of the stats report: ``Nd`` → now − N days; an ISO date/time → that moment in UTC
    (a date alone is UTC midnight, a naive time is local time, as JavaScript's ``Date`` reads them);
    returned as ``YYYY-MM-DD HH:MM:SS`` text. Anything else raises ``ValueError``."""
    if m := _DAYS.match(value.strip()):
        moment = now.astimezone(UTC) - timedelta(days=int(m.group(1)))
    else:
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"Invalid --since value: {value}. Use Nd (e.g. 30d) or ISO date.") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC) if len(value.strip()) == 10 else parsed.astimezone()
        moment = parsed.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def cutoff_days_ago(conn: sqlite3.Connection | Executor, days: float) -> str:
    """SQLite's ``datetime('now', '-N days')``: the text every "last N days" filter compares against."""
    row = as_executor(conn).fetch_one("SELECT datetime('now', ?)", (f"-{days} days",))
    assert row is not None
    return str(row[0])


def repo_stats(conn: sqlite3.Connection | Executor, repo: str, since: str | None = None) -> RepoStats:
    """Totals, severity split, averages and top files for ``repo``; ``since`` keeps reviews created ≥ it."""
    db = as_executor(conn)
    where = "r.repo = ?" + (" AND r.created_at >= ?" if since is not None else "")
    params: tuple[object, ...] = (repo, since) if since is not None else (repo,)
    totals = db.fetch_one(
        "SELECT COUNT(*), COALESCE(SUM(r.findings_total), 0), COALESCE(SUM(r.suppressions_applied), 0) "
        f"FROM reviews r WHERE {where}",
        params,
    )
    assert totals is not None  # an aggregate without GROUP BY always has one row
    total_reviews, total_findings, total_suppressed = totals
    by_severity = dict.fromkeys(SEVERITIES, 0)
    for severity, count in db.fetch_all(
        f"SELECT f.severity, COUNT(*) FROM findings f JOIN reviews r ON r.id = f.review_id WHERE {where} "
        "GROUP BY f.severity",
        params,
    ):
        if severity in by_severity:
            by_severity[severity] = int(count)
    (avg_confidence,) = db.fetch_one(
        f"SELECT AVG(f.confidence) FROM findings f JOIN reviews r ON r.id = f.review_id WHERE {where}", params
    ) or (None,)
    top_files = [
        TopFile(path=str(path), finding_count=int(count))
        for path, count in db.fetch_all(
            f"SELECT f.file_path, COUNT(*) AS n FROM findings f JOIN reviews r ON r.id = f.review_id "
            f"WHERE {where} GROUP BY f.file_path ORDER BY n DESC, f.file_path ASC LIMIT 10",
            params,
        )
    ]
    return RepoStats(
        total_reviews=int(total_reviews),
        total_findings=int(total_findings),
        findings_by_severity=by_severity,
        total_suppressed=int(total_suppressed),
        avg_findings_per_review=(total_findings / total_reviews) if total_reviews else 0.0,
        avg_confidence=float(avg_confidence) if avg_confidence is not None else 0.0,
        top_files=top_files,
    )


def has_severity_rows(conn: sqlite3.Connection | Executor, repo: str, since: str | None = None) -> bool:
    where = "r.repo = ?" + (" AND r.created_at >= ?" if since is not None else "")
    params: tuple[object, ...] = (repo, since) if since is not None else (repo,)
    row = as_executor(conn).fetch_one(
        f"SELECT 1 FROM findings f JOIN reviews r ON r.id = f.review_id WHERE {where} LIMIT 1", params
    )
    return row is not None


def repo_trends(
    conn: sqlite3.Connection | Executor, repo: str, days: int, *, descending: bool = False
) -> list[TrendRow]:
    """One row per UTC day with ≥ 1 review in the last ``days`` days (ascending; the report wants descending)."""
    cutoff = f"-{int(days)} days"
    order = "DESC" if descending else "ASC"
    rows = as_executor(conn).fetch_all(
        "SELECT d.day, d.review_count, COALESCE(f.findings_count, 0), d.suppressions_count, "
        "COALESCE(f.avg_confidence, 0) FROM ("
        "  SELECT date(created_at) AS day, COUNT(*) AS review_count, "
        "         COALESCE(SUM(suppressions_applied), 0) AS suppressions_count"
        "  FROM reviews WHERE repo = ? AND created_at >= datetime('now', ?) GROUP BY day"
        ") d LEFT JOIN ("
        "  SELECT date(r.created_at) AS day, COUNT(f.id) AS findings_count, AVG(f.confidence) AS avg_confidence"
        "  FROM findings f JOIN reviews r ON r.id = f.review_id"
        "  WHERE r.repo = ? AND r.created_at >= datetime('now', ?) GROUP BY day"
        f") f ON f.day = d.day ORDER BY d.day {order}",
        (repo, cutoff, repo, cutoff),
    )
    return [
        TrendRow(
            date=str(day),
            review_count=int(reviews),
            findings_count=int(findings),
            suppressions_count=int(suppressions),
            avg_confidence=float(avg),
        )
        for day, reviews, findings, suppressions, avg in rows
    ]


def feedback_patterns(conn: sqlite3.Connection | Executor, repo: str) -> list[FeedbackPattern]:
    """Group the repo's reactions (joined to reviews) by exact title, keeping groups with ≥ 1 thumbs-down."""
    db = as_executor(conn)
    groups = db.fetch_all(
        "SELECT fr.title, "
        "  SUM(CASE WHEN fr.reaction_content = '-1' THEN 1 ELSE 0 END) AS down, "
        "  SUM(CASE WHEN fr.reaction_content = '+1' THEN 1 ELSE 0 END) AS up, "
        "  COUNT(DISTINCT CASE WHEN fr.reaction_content = '-1' THEN fr.reactor_login END), "
        "  COUNT(DISTINCT CASE WHEN fr.reaction_content = '-1' THEN r.pr_number END) "
        "FROM feedback_reactions fr JOIN reviews r ON r.id = fr.review_id "
        "WHERE fr.repo = ? GROUP BY fr.title "
        "HAVING SUM(CASE WHEN fr.reaction_content = '-1' THEN 1 ELSE 0 END) >= 1 ORDER BY fr.title",
        (repo,),
    )
    patterns: list[FeedbackPattern] = []
    for title, down, up, reactors, prs in groups:
        severity, category = db.fetch_one(
            "SELECT severity, category FROM feedback_reactions WHERE repo = ? AND title = ? ORDER BY id DESC LIMIT 1",
            (repo, title),
        ) or (None, None)
        patterns.append(
            FeedbackPattern(
                fingerprint=fingerprint_finding_title(str(title)),
                thumbs_down_count=int(down),
                thumbs_up_count=int(up),
                distinct_reactors=int(reactors),
                distinct_prs=int(prs),
                severity=str(severity),
                category=str(category),
                sample_title=str(title),
            )
        )
    return patterns
