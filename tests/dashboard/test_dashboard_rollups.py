"""The dashboard's rollups (kodiai.storage.rollups) against plain SQL, on SQLite and PostgreSQL: six weeks of
rows imported with their dates, folded by the stores' first write of the day, then a reaction synced late, a
late fix, the next day's fold, a reaction withdrawn, a back-dated import and retention — after each, every
page's figures from the rollups equal the figures summed from every row, for the operator, a one-repository
writer and a viewer with no repository."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kodiai.dashboard.queries_memory import memory_quality
from kodiai.dashboard.queries_overview import overview
from kodiai.dashboard.queries_retrieval import retrieval_summary
from kodiai.dashboard.scope import Access, scope_for
from kodiai.dashboard.sources import Sources, open_sources
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import FeedbackReactionRecord, ReviewRecord
from kodiai.storage.rollups import seal_knowledge, utc_today
from kodiai.storage.telemetry import ExecutionRecord, TelemetryStore
from support.db_backends import DbBackend
from support.seed_dashboard import comparable

OPERATOR = Access("operator", operator=True)
ALICE = Access("alice", repos=frozenset({"acme/api"}))
NOBODY = Access("bob")
REPOS = ("acme/api", "acme/web")
REVIEWS = 60


def _at(now: datetime, days: int, hours: int) -> str:
    return (now - timedelta(days=days, hours=hours)).strftime("%Y-%m-%d %H:%M:%S")


def _import_history(backend: DbBackend, now: datetime) -> None:
    """Rows of the past six weeks written with their dates (an import): none of them today."""
    with backend.connect("telemetry") as t, t.transaction() as tx:
        for i in range(80):
            tx.execute(
                "INSERT INTO retrieval_quality (created_at, repo, pr_number, delivery_id, event_type,"
                " candidate_count, result_count, threshold_method, distance_threshold, confidence_high)"
                " VALUES (?, ?, 1, ?, 'review', ?, ?, ?, ?, ?)",
                (_at(now, 1 + i % 40, i % 5), REPOS[i % 2], f"rq-{i}", 5 + i % 4, i % 3,
                 ("adaptive", "percentile", None)[i % 3], 0.1 + 0.013 * (i % 7), i % 2),
            )  # fmt: skip
        for i in range(90):
            tx.execute(
                "INSERT INTO executions (created_at, repo, event_type, model, duration_ms, cost_usd, conclusion)"
                " VALUES (?, ?, 'review', 'm', ?, ?, ?)",
                (_at(now, 1 + i % 40, i % 7), REPOS[i % 2], 1000 + 37 * i, 0.01 * (i % 9) + 0.003,
                 ("success", "timeout")[i % 4 == 0]),
            )  # fmt: skip
    with backend.connect("knowledge") as k, k.transaction() as tx:
        for i in range(REVIEWS):
            at, repo = _at(now, 1 + i % 40, i % 6), REPOS[i % 2]
            review = tx.fetch_one(
                "INSERT INTO reviews (created_at, repo, pr_number, delivery_id, findings_total, conclusion)"
                " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                (at, repo, 100 + i, f"h-{i}", 1 + i % 3, ("success", "failure")[i % 5 == 0]),
            )
            assert review is not None
            _review_rows(tx, int(review[0]), i, at, repo, f"h-{i}")


def _review_rows(tx: Any, review_id: int, i: int, at: str, repo: str, delivery: str) -> None:
    """A review's findings (comment ids 5000 + 10 i + n), a reaction on its first, the first fixed by a
    later push for every fourth review, and the memories its retrieval kept and cut."""
    first = None
    for n in range(1 + i % 3):
        finding = tx.fetch_one(
            "INSERT INTO findings (review_id, created_at, file_path, severity, category, confidence, title,"
            " comment_id) VALUES (?, ?, 'a.py', ?, 'bug', 80, ?, ?) RETURNING id",
            (review_id, at, ("critical", "major", "minor")[(i + n) % 3], f"t{n}", 5000 + 10 * i + n),
        )
        assert finding is not None
        first = first or int(finding[0])
    tx.execute(
        "INSERT INTO feedback_reactions (created_at, repo, review_id, finding_id, comment_id, comment_surface,"
        " reaction_id, reaction_content, reactor_login, severity, category, file_path, title)"
        " VALUES (?, ?, ?, ?, ?, 'pull_request_review_comment', ?, ?, 'u', 'major', 'bug', 'a.py', 't')",
        (at, repo, review_id, first, 5000 + 10 * i, 7000 + i, ("+1", "-1", "-1", "heart")[i % 4]),
    )
    if i % 4 == 0:
        tx.execute(
            "INSERT INTO resolved_findings (created_at, finding_id, review_id, repo, pr_number)"
            " VALUES (?, ?, ?, ?, ?)",
            (at, first, 900000 + i, repo, 100 + i),
        )
    for fid, kept in ((600 + i % 7, 1), (700 + i % 4, 1), (800 + i % 3, 0)):
        tx.execute(
            "INSERT INTO retrieval_hits (created_at, delivery_id, repo, pr_number, memory_id, finding_id,"
            " source_repo, outcome, distance, kept) VALUES (?, ?, ?, 1, ?, ?, ?, 'accepted', 0.2, ?)",
            (at, delivery, repo, fid, fid, REPOS[fid % 2], kept),
        )


def _check(src: Sources, ranges: tuple[str, ...] = ("90d",)) -> None:
    """Every page's figures from the rollups equal those summed from every row, for three viewers."""
    for access in (OPERATOR, ALICE, NOBODY):
        for range_key in ranges:
            scope = scope_for(access, repo=None, range_key=range_key, now=datetime.now(UTC))
            got = overview(src.knowledge, src.telemetry, None, scope)
            assert comparable(got) == comparable(
                overview(src.knowledge, src.telemetry, None, scope, rollups=False)
            )
            got_r = retrieval_summary(src.telemetry, scope)
            assert comparable(got_r) == comparable(retrieval_summary(src.telemetry, scope, rollups=False))
            got_m = memory_quality(src.knowledge, scope)
            assert comparable(got_m) == comparable(memory_quality(src.knowledge, scope, rollups=False))


def _memory(src: Sources, repo: str, finding_id: int) -> tuple[int, int, int]:
    scope = scope_for(OPERATOR, repo=None, range_key="90d", now=datetime.now(UTC))
    top = {(m.repo, m.finding_id): m for m in memory_quality(src.knowledge, scope).top}
    m = top[(repo, finding_id)]
    return m.up, m.down, m.fixed


def _plain_outcomes(backend: DbBackend, finding_id: int) -> tuple[int, int, int]:
    """👍, 👎 and fixed beside memory ``finding_id``, summed by hand from every row."""
    up_down = backend.rows(
        "knowledge",
        "SELECT fr.reaction_content AS c FROM retrieval_hits h JOIN reviews r ON r.delivery_id = h.delivery_id"
        " JOIN feedback_reactions fr ON fr.review_id = r.id WHERE h.finding_id = ? AND h.kept = 1",
        (finding_id,),
    )
    fixed = backend.scalar(
        "knowledge",
        "SELECT COUNT(*) FROM retrieval_hits h JOIN reviews r ON r.delivery_id = h.delivery_id"
        " JOIN findings f ON f.review_id = r.id WHERE h.finding_id = ? AND h.kept = 1"
        " AND EXISTS (SELECT 1 FROM resolved_findings x WHERE x.finding_id = f.id)",
        (finding_id,),
    )
    return sum(r["c"] == "+1" for r in up_down), sum(r["c"] == "-1" for r in up_down), int(fixed)


@pytest.fixture
def history(db_backend: DbBackend) -> Iterator[tuple[DbBackend, Sources, TelemetryStore, KnowledgeStore]]:
    now = datetime.now(UTC)
    telemetry = TelemetryStore(db_backend.target("telemetry"))
    knowledge = KnowledgeStore(db_backend.target("knowledge"))
    _import_history(db_backend, now)
    sources = open_sources(db_backend.target("telemetry"), db_backend.target("knowledge"), None)
    try:
        yield db_backend, sources, telemetry, knowledge
    finally:
        sources.close()
        telemetry.close()
        knowledge.close()


def test_rollup_figures_equal_plain_sql_through_late_reactions_imports_and_retention(
    history: tuple[DbBackend, Sources, TelemetryStore, KnowledgeStore],
) -> None:
    backend, src, telemetry, knowledge = history

    # the stores' first write of the day folds every earlier day; today's rows stay in the tail
    telemetry.record(
        ExecutionRecord(repo="acme/api", event_type="review", model="m", duration_ms=5, conclusion="success")
    )
    knowledge.record_review(
        ReviewRecord(repo="acme/api", pr_number=1, delivery_id="today", conclusion="success")
    )
    marks = {
        r["source"]: r["watermark"]
        for store in ("telemetry", "knowledge")
        for r in backend.rows(store, f"SELECT source, watermark FROM {store}_rollup_state")
    }
    assert marks == {
        "retrieval_quality": 80, "executions": 90, "reviews": REVIEWS,
        "findings": backend.scalar("knowledge", "SELECT COUNT(*) FROM findings"),
        "feedback_reactions": REVIEWS, "resolved_findings": REVIEWS // 4, "retrieval_hits": 3 * REVIEWS,
    }  # fmt: skip
    assert backend.scalar("knowledge", "SELECT SUM(reviews) FROM dashboard_reviews_daily") == REVIEWS
    assert backend.scalar("telemetry", "SELECT SUM(runs) FROM dashboard_runs_daily") == 90
    for store, table in (
        ("telemetry", "dashboard_run_values_daily"),
        ("knowledge", "dashboard_memory_daily"),
        ("knowledge", "dashboard_memory_outcomes_daily"),
    ):
        assert backend.scalar(store, f"SELECT COUNT(*) FROM {table}") > 20, table
    _check(src, ("30d", "90d"))
    assert _memory(src, "acme/api", 600) == _plain_outcomes(backend, 600)

    # a reaction synced today on a three-week-old review shows at once (the tail), before any fold
    old = backend.rows(
        "knowledge",
        "SELECT r.id, r.repo, f.id AS fid, f.comment_id FROM reviews r JOIN findings f ON f.review_id = r.id"
        " WHERE r.delivery_id = 'h-21' ORDER BY f.id",
    )[0]
    before = _memory(src, "acme/api", 600)  # review 21 kept memory 600 + 21 % 7 = 600
    knowledge.record_feedback_reactions(
        [
            FeedbackReactionRecord(
                repo=old["repo"], review_id=old["id"], finding_id=old["fid"], comment_id=old["comment_id"],
                comment_surface="pull_request_review_comment", reaction_id=8001, reaction_content="+1",
                reactor_login="late", severity="major", category="bug", file_path="a.py", title="t0",
            )
        ]
    )  # fmt: skip
    knowledge.record_resolved_findings(999999, old["repo"], 121, [old["fid"]])
    assert _memory(src, "acme/api", 600) == (before[0] + 1, before[1], before[2] + 1)
    assert _memory(src, "acme/api", 600) == _plain_outcomes(backend, 600)
    _check(src)

    # the next day's fold takes them into the rollup
    with backend.connect("knowledge") as db:
        seal_knowledge(db, utc_today() + timedelta(days=1))
    assert (
        backend.scalar(
            "knowledge", "SELECT up FROM dashboard_review_outcomes WHERE review_id = ?", (old["id"],)
        )
        >= 1
    )
    _check(src)

    # a reaction withdrawn on GitHub (folded long ago) and a repository's reactions cleared
    gone = backend.rows(
        "knowledge",
        "SELECT repo, comment_id FROM feedback_reactions WHERE reaction_content = '-1' AND repo = 'acme/api'"
        " ORDER BY id",
    )[0]
    assert knowledge.remove_withdrawn_reactions(gone["repo"], gone["comment_id"], []) == 1
    assert knowledge.clear_feedback_suppressions("acme/web") > 0
    _check(src)

    # rows imported with an old date after the fold: counted from the tail
    now = datetime.now(UTC)
    with backend.connect("knowledge") as k, k.transaction() as tx:
        review = tx.fetch_one(
            "INSERT INTO reviews (created_at, repo, pr_number, delivery_id, findings_total, conclusion)"
            " VALUES (?, 'acme/api', 300, 'h-imported', 1, 'success') RETURNING id",
            (_at(now, 12, 1),),
        )
        assert review is not None
        _review_rows(tx, int(review[0]), 1001, _at(now, 12, 1), "acme/api", "h-imported")
    backend.write(
        "telemetry",
        "INSERT INTO executions (created_at, repo, event_type, model, duration_ms, cost_usd, conclusion)"
        " VALUES (?, 'acme/api', 'review', 'm', 99999, 7.5, 'failure')",
        (_at(now, 12, 1),),
    )
    _check(src)

    # retention deletes the runs older than 35 days: their days leave the rollup with them
    purged = telemetry.purge_older_than(35)
    assert purged > 0
    assert (
        backend.scalar(
            "telemetry", "SELECT COUNT(*) FROM dashboard_runs_daily WHERE day < ?", (_at(now, 35, 0)[:10],)
        )
        == 0
    )
    scope = scope_for(OPERATOR, repo=None, range_key="90d", now=datetime.now(UTC))
    assert overview(src.knowledge, src.telemetry, None, scope).runs == backend.scalar(
        "telemetry", "SELECT COUNT(*) FROM executions WHERE created_at >= ?", (scope.since,)
    )
    _check(src, ("30d", "90d"))
