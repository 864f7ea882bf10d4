"""Each dashboard query against the same seeded rows on SQLite and PostgreSQL, its figures checked against
plain SQL on those rows (or the seed's documented figures where the plain SQL would be the query itself)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kodiai.dashboard.queries_jobs import recent_jobs
from kodiai.dashboard.queries_memory import memory_export, memory_quality
from kodiai.dashboard.queries_overview import overview
from kodiai.dashboard.queries_quiet import quiet_report
from kodiai.dashboard.queries_retrieval import retrieval_summary
from kodiai.dashboard.scope import Access, scope_for
from kodiai.dashboard.sources import Sources
from kodiai.dashboard.stats import percentile
from kodiai.storage.rollups import seal_knowledge, seal_telemetry
from support.db_backends import DbBackend
from support.seed_dashboard import INSTALLATION, comparable

OPERATOR = Access("operator", operator=True)
ALICE = Access("alice", repos=frozenset({"acme/api"}), installations=frozenset({INSTALLATION}))
NOBODY = Access("bob")


def _scope(access: Access, repo: str | None = None, range_key: str = "90d") -> Any:
    return scope_for(access, repo=repo, range_key=range_key, now=datetime.now(UTC))


def _seal(backend: DbBackend) -> None:
    """Fold every row into the rollups, as tomorrow's first write through a store does (the seed's rows dated
    today come first in id order: today's fold would stop at them)."""
    tomorrow = datetime.now(UTC).date() + timedelta(days=1)
    with backend.connect("telemetry") as t:
        seal_telemetry(t, tomorrow)
    with backend.connect("knowledge") as k:
        seal_knowledge(k, tomorrow)


def test_overview_matches_plain_sql(seeded: tuple[DbBackend, Sources]) -> None:
    backend, src = seeded
    scope = _scope(ALICE)
    got = overview(src.knowledge, src.telemetry, src.jobs, scope)
    since = (scope.since,)
    assert got.reviews == backend.scalar(
        "knowledge", "SELECT COUNT(*) FROM reviews WHERE repo = 'acme/api' AND created_at >= ?", since
    )
    assert got.reviews == 2
    severities = backend.rows(
        "knowledge",
        "SELECT f.severity, COUNT(*) AS n FROM findings f JOIN reviews r ON r.id = f.review_id"
        " WHERE r.repo = 'acme/api' GROUP BY f.severity",
    )
    assert {k: v for k, v in got.findings.items() if v} == {r["severity"]: r["n"] for r in severities}
    runs = backend.rows(
        "telemetry",
        "SELECT duration_ms, cost_usd, conclusion FROM executions WHERE repo = 'acme/api' AND created_at >= ?",
        since,
    )
    assert got.runs == len(runs) > 0
    assert got.duration_p95_ms == percentile([r["duration_ms"] for r in runs], 95)
    assert got.cost_usd == pytest.approx(sum(r["cost_usd"] for r in runs))
    assert sum(got.errors.values()) == sum(1 for r in runs if r["conclusion"] != "success")
    assert got.queue == {"pending": 1, "running": 0, "requeued": 0, "dead": 1}  # installation 999 hidden
    assert [r[0] for r in got.by_repo.rows] == ["acme/api"]
    everything = overview(src.knowledge, src.telemetry, src.jobs, _scope(OPERATOR))
    assert everything.reviews == 3 and everything.queue["dead"] == 2
    assert overview(src.knowledge, src.telemetry, src.jobs, _scope(NOBODY)).reviews == 0


def test_retrieval_matches_plain_sql(seeded: tuple[DbBackend, Sources]) -> None:
    backend, src = seeded
    scope = _scope(OPERATOR)
    got = retrieval_summary(src.telemetry, scope)
    plain = backend.rows(
        "telemetry",
        "SELECT COUNT(*) AS n, SUM(candidate_count) AS c, SUM(result_count) AS k,"
        " SUM(CASE WHEN result_count = 0 THEN 1 ELSE 0 END) AS e FROM retrieval_quality WHERE created_at >= ?",
        (scope.since,),
    )[0]
    assert (got.retrievals, got.candidates, got.kept, got.empty) == (
        plain["n"],
        plain["c"],
        plain["k"],
        plain["e"],
    )
    assert got.memory_share == pytest.approx((plain["n"] - plain["e"]) / plain["n"])
    methods = backend.rows(
        "telemetry",
        "SELECT COALESCE(threshold_method, 'unknown') AS m, COUNT(*) AS n FROM retrieval_quality"
        " WHERE created_at >= ? GROUP BY COALESCE(threshold_method, 'unknown')",
        (scope.since,),
    )
    assert {r[0]: r[1] for r in got.by_method.rows} == {r["m"]: r["n"] for r in methods}
    assert sum(sum(d.values()) for _, d in got.daily) == got.retrievals
    api = retrieval_summary(src.telemetry, _scope(ALICE))
    assert api.retrievals == backend.scalar(
        "telemetry",
        "SELECT COUNT(*) FROM retrieval_quality WHERE repo = 'acme/api' AND created_at >= ?",
        (scope.since,),
    )


def test_memory_quality_figures(seeded: tuple[DbBackend, Sources]) -> None:
    backend, src = seeded
    got = memory_quality(src.knowledge, _scope(OPERATOR))
    by_id = {m.finding_id: m for m in got.top}
    kept_501 = backend.scalar(
        "knowledge", "SELECT COUNT(*) FROM retrieval_hits WHERE finding_id = 501 AND kept = 1"
    )
    assert by_id[501].retrieved == kept_501 == 2
    reactions = backend.rows(
        "knowledge",
        "SELECT fr.reaction_content AS c FROM retrieval_hits h JOIN reviews r ON r.delivery_id = h.delivery_id"
        " JOIN feedback_reactions fr ON fr.review_id = r.id WHERE h.finding_id = 501 AND h.kept = 1",
    )
    assert (
        (by_id[501].up, by_id[501].down)
        == (
            sum(r["c"] == "+1" for r in reactions),
            sum(r["c"] == "-1" for r in reactions),
        )
        == (2, 4)
    )
    assert by_id[501].precision == pytest.approx(1 / 3) and by_id[501].judged == 6
    assert 503 not in by_id  # only ever cut: not among the retrieved
    assert [m.finding_id for m in got.flagged] == [500]
    assert [m.finding_id for m in got.never_retrieved] == [503, 504]  # oldest first
    rollup = {r[0]: r for r in got.rollup.rows}
    assert rollup["acme/api"][1:5] == (3, 2, 2, 5)
    every = {r[1]: r for r in memory_export(src.knowledge, _scope(OPERATOR)).rows}
    assert sorted(every) == [500, 501, 502, 503, 504] and every[501][7:9] == (2, 4)
    assert every[503][5:7] == (0, 1)  # retrieved 0, cut once
    alice = memory_quality(src.knowledge, _scope(ALICE))
    assert {m.repo for m in alice.top + alice.never_retrieved} == {"acme/api"}
    assert {r[0] for r in memory_export(src.knowledge, _scope(ALICE)).rows} == {"acme/api"}
    nobody = memory_quality(src.knowledge, _scope(NOBODY))
    assert nobody.top == nobody.never_retrieved == nobody.flagged == [] and nobody.rollup.rows == []


def test_quiet_report_and_jobs(seeded: tuple[DbBackend, Sources]) -> None:
    _backend, src = seeded
    report = quiet_report(src.knowledge, src.telemetry, "acme/api", 1)
    assert [r[3] for r in report.reviews.rows] == ["rv1"]
    assert sorted((r[1], r[6]) for r in report.hits.rows) == [(501, True), (503, False)]
    assert report.retrievals.rows and all(r[1] is not None for r in report.retrievals.rows)
    jobs = recent_jobs(src.jobs, _scope(ALICE))
    assert {r[0] for r in jobs.rows} == {"job-dead-1", "job-done-1", "job-pending-1"}
    assert len(recent_jobs(src.jobs, _scope(OPERATOR)).rows) == 4
    assert recent_jobs(src.jobs, _scope(NOBODY)).rows == []


def test_memory_top_and_rollup_past_the_page_limit_match_plain_sql(seeded: tuple[DbBackend, Sources]) -> None:
    """More memories than the page lists: the top is the plain SQL's first 200 (ties by repository and
    finding), the per-repository figures count every memory, and a flagged memory outside the top keeps
    its own retrieval count."""
    backend, src = seeded
    with backend.connect("knowledge") as db, db.transaction() as tx:
        for fid in range(1000, 1250):
            for n in range(2 + fid % 3):
                tx.execute(
                    "INSERT INTO retrieval_hits (delivery_id, repo, pr_number, memory_id, finding_id, source_repo,"
                    " outcome, distance, kept) VALUES (?, 'acme/api', 9, ?, ?, 'acme/api', 'accepted', 0.1, 1)",
                    (f"bulk-{fid}-{n}", fid, fid),
                )
    got = memory_quality(src.knowledge, _scope(OPERATOR))
    plain = backend.rows(
        "knowledge",
        "SELECT source_repo AS repo, finding_id AS fid, COUNT(*) AS n FROM retrieval_hits WHERE kept = 1"
        " GROUP BY source_repo, finding_id ORDER BY COUNT(*) DESC, source_repo, finding_id",
    )
    assert len(plain) > 200
    assert [(m.repo, m.finding_id, m.retrieved) for m in got.top] == [
        (r["repo"], r["fid"], r["n"]) for r in plain[:200]
    ]
    rollup = {r[0]: r for r in got.rollup.rows}
    for repo in {r["repo"] for r in plain}:
        mine = [r for r in plain if r["repo"] == repo]
        assert rollup[repo][1:3] == (sum(r["n"] for r in mine), len(mine))
    flagged = {m.finding_id: m for m in got.flagged}
    assert flagged[500].retrieved == next(r["n"] for r in plain if r["fid"] == 500)
    assert 500 not in {m.finding_id for m in got.top}  # counted outside the top


def test_overview_from_rollups_equals_the_plain_figures(seeded: tuple[DbBackend, Sources]) -> None:
    """Rows on many past days, on the range's first (partial) day and today, folded into the rollups: the
    rollup read gives the figures summed from every row, and a row written today after the fold is counted."""
    backend, src = seeded
    now = datetime.now(UTC)
    with backend.connect("knowledge") as k, k.transaction() as kt:
        for i in range(40):
            at = (now - timedelta(days=i % 31, hours=i % 5)).strftime("%Y-%m-%d %H:%M:%S")
            repo = ("acme/api", "acme/web")[i % 2]
            row = kt.fetch_one(
                "INSERT INTO reviews (created_at, repo, pr_number, findings_total, conclusion)"
                " VALUES (?, ?, ?, ?, 'success') RETURNING id",
                (at, repo, 100 + i, i % 3),
            )
            assert row is not None
            for j in range(i % 3):
                kt.execute(
                    "INSERT INTO findings (review_id, created_at, file_path, severity, category, confidence, title)"
                    " VALUES (?, ?, 'a.py', ?, 'bug', 80, 't')",
                    (row[0], at, ("critical", "major", "minor")[j]),
                )
    with backend.connect("telemetry") as t, t.transaction() as tt:
        for i in range(60):
            at = (now - timedelta(days=i % 31, hours=i % 7)).strftime("%Y-%m-%d %H:%M:%S")
            tt.execute(
                "INSERT INTO executions (created_at, repo, event_type, model, duration_ms, cost_usd, conclusion)"
                " VALUES (?, ?, 'review', 'm', ?, ?, ?)",
                (
                    at,
                    ("acme/api", "acme/web")[i % 2],
                    1000 + 37 * i,
                    0.01 * (i % 9) + 0.003,
                    ("success", "timeout")[i % 4 == 0],
                ),
            )
    _seal(backend)
    assert backend.scalar("knowledge", "SELECT COUNT(*) FROM dashboard_reviews_daily") > 20
    for access in (OPERATOR, ALICE, NOBODY):
        scope = _scope(access, range_key="30d")
        plain = overview(src.knowledge, src.telemetry, src.jobs, scope, rollups=False)
        assert comparable(overview(src.knowledge, src.telemetry, src.jobs, scope)) == comparable(plain)
    scope = _scope(OPERATOR, range_key="30d")
    before = overview(src.knowledge, src.telemetry, src.jobs, scope)
    assert before.reviews > 30 and len(before.daily) > 20
    backend.write(
        "knowledge",
        "INSERT INTO reviews (repo, pr_number, findings_total, conclusion) VALUES ('acme/api', 999, 0, 'success')",
    )
    after = overview(src.knowledge, src.telemetry, src.jobs, scope)
    assert comparable(after) == comparable(
        overview(src.knowledge, src.telemetry, src.jobs, scope, rollups=False)
    )
    assert after.reviews == before.reviews + 1  # today's rows are read per request


def test_memory_quality_from_rollups_equals_the_plain_figures(seeded: tuple[DbBackend, Sources]) -> None:
    """Kept retrievals and reactions spread over a month, some on another repository's reviews, folded into
    the rollups: the rollup read gives the figures summed from every row for every viewer, and today's new
    retrieval is counted."""
    backend, src = seeded
    now = datetime.now(UTC)
    with backend.connect("knowledge") as k, k.transaction() as kt:
        for i in range(45):
            at = (now - timedelta(days=i % 32, hours=i % 6)).strftime("%Y-%m-%d %H:%M:%S")
            repo = ("acme/api", "acme/web")[i % 2]
            review = kt.fetch_one(
                "INSERT INTO reviews (created_at, repo, pr_number, delivery_id, conclusion)"
                " VALUES (?, ?, ?, ?, 'success') RETURNING id",
                (at, repo, 200 + i, f"day-{i}"),
            )
            assert review is not None
            kt.execute(
                "INSERT INTO feedback_reactions (repo, review_id, finding_id, comment_id, comment_surface,"
                " reaction_id, reaction_content, reactor_login, severity, category, file_path, title)"
                " VALUES (?, ?, 1, ?, 'pull_request_review_comment', ?, ?, 'u', 'major', 'bug', 'a.py', 't')",
                (repo, review[0], 9000 + i, 7000 + i, ("+1", "-1", "-1")[i % 3]),
            )
            for n in range(i % 3):  # findings of the review, one of two fixed by a later push
                finding = kt.fetch_one(
                    "INSERT INTO findings (review_id, file_path, severity, category, confidence, title)"
                    " VALUES (?, 'a.py', 'major', 'bug', 80, ?) RETURNING id",
                    (review[0], f"f{n}"),
                )
                assert finding is not None
                if n == 0:
                    kt.execute(
                        "INSERT INTO resolved_findings (finding_id, review_id, repo, pr_number)"
                        " VALUES (?, ?, ?, ?)",
                        (finding[0], 100000 + i, repo, 200 + i),
                    )
            for fid in (600 + i % 7, 700 + i % 4):
                kt.execute(
                    "INSERT INTO retrieval_hits (created_at, delivery_id, repo, pr_number, memory_id, finding_id,"
                    " source_repo, outcome, distance, kept) VALUES (?, ?, ?, 1, ?, ?, ?, 'accepted', 0.2, 1)",
                    (at, f"day-{i}", repo, fid, fid, ("acme/api", "acme/web")[fid % 2]),
                )
    _seal(backend)
    assert backend.scalar("knowledge", "SELECT COUNT(*) FROM dashboard_review_outcomes") > 40
    for access in (OPERATOR, ALICE, NOBODY):
        scope = _scope(access, range_key="30d")
        assert memory_quality(src.knowledge, scope) == memory_quality(src.knowledge, scope, rollups=False)
    scope = _scope(OPERATOR, range_key="30d")
    before = memory_quality(src.knowledge, scope)
    assert sum(r[1] for r in before.rollup.rows) > 40 and any(m.up and m.down for m in before.top)
    assert sum(r[8] for r in before.rollup.rows) > 20 and any(m.fixed for m in before.top)
    backend.write(
        "knowledge",
        "INSERT INTO retrieval_hits (delivery_id, repo, memory_id, finding_id, source_repo, outcome, distance,"
        " kept) VALUES ('today-1', 'acme/api', 600, 600, 'acme/api', 'accepted', 0.2, 1)",
    )
    after = memory_quality(src.knowledge, scope)
    assert after == memory_quality(src.knowledge, scope, rollups=False)
    assert sum(r[1] for r in after.rollup.rows) == sum(r[1] for r in before.rollup.rows) + 1


def test_retrieval_from_rollups_equals_the_plain_figures(seeded: tuple[DbBackend, Sources]) -> None:
    backend, src = seeded
    now = datetime.now(UTC)
    with backend.connect("telemetry") as t, t.transaction() as tt:
        for i in range(50):
            at = (now - timedelta(days=i % 32, hours=i % 5)).strftime("%Y-%m-%d %H:%M:%S")
            tt.execute(
                "INSERT INTO retrieval_quality (created_at, repo, pr_number, delivery_id, event_type,"
                " candidate_count, result_count, threshold_method, distance_threshold)"
                " VALUES (?, ?, 1, ?, 'review', ?, ?, ?, ?)",
                (at, ("acme/api", "acme/web")[i % 2], f"rq-{i}", 5 + i % 4, i % 3,
                 ("adaptive", "percentile", None)[i % 3], 0.1 + 0.013 * (i % 7)),
            )  # fmt: skip
    _seal(backend)
    assert backend.scalar("telemetry", "SELECT COUNT(*) FROM dashboard_retrieval_daily") > 20
    for access in (OPERATOR, ALICE, NOBODY):
        scope = _scope(access, range_key="30d")
        plain = retrieval_summary(src.telemetry, scope, rollups=False)
        assert comparable(retrieval_summary(src.telemetry, scope)) == comparable(plain)
    assert retrieval_summary(src.telemetry, _scope(OPERATOR, range_key="30d")).retrievals > 40
