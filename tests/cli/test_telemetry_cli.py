"""`kodiai telemetry stats|trends|usage|retrieval` through typer's CliRunner against real SQLite files,
including a migrated copy of the original's Phase 56 telemetry DB. Expected numbers come from SQL run
independently in each test."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import FindingRecord, ReviewRecord
from kodiai.storage.telemetry import RetrievalQualityRecord, TelemetryStore
from storage.fixture_paths import copy_fixture_db

runner = CliRunner()


def _invoke(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env=env or {})


def _q(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


@pytest.fixture
def migrated_telemetry(tmp_path: Path) -> Path:
    """The fixture DB upgraded by `kodiai db upgrade`, plus 5 new-style rows that carry a threshold_method."""
    path = copy_fixture_db("telemetry", tmp_path)
    result = _invoke("db", "upgrade", "--telemetry", str(path))
    assert result.exit_code == 0, result.output
    store = TelemetryStore(path)
    for i, (method, count, dist, ratio) in enumerate(
        [
            ("adaptive", 4, 0.2, 1.0),
            ("adaptive", 2, 0.1, 0.5),
            ("percentile", 3, 0.4, 0.0),
            ("configured", 0, None, None),
            ("adaptive", 5, 0.3, 0.8),
        ]
    ):
        store.record_retrieval_quality(
            RetrievalQualityRecord(
                delivery_id=f"new-{i}",
                repo="acme/api",
                pr_number=500 + i,
                event_type="pull_request.synchronize",
                top_k=5,
                distance_threshold=0.3,
                result_count=count,
                avg_distance=dist,
                language_match_ratio=ratio,
                threshold_method=method,
            )
        )
    store.close()
    return path


def _expected_group(path: Path, where: str = "1=1", params: tuple[object, ...] = ()) -> dict[str, object]:
    rows, total, avg_count, zero, avg_dist, avg_ratio = _q(
        path,
        "SELECT COUNT(*), SUM(result_count), AVG(result_count), SUM(result_count = 0), AVG(avg_distance), "
        f"AVG(language_match_ratio) FROM retrieval_quality WHERE {where}",
        params,
    )[0]
    return {
        "rows": rows,
        "total_results": total,
        "avg_result_count": avg_count,
        "zero_result_rows": zero,
        "avg_distance": avg_dist,
        "avg_language_match_ratio": avg_ratio,
    }


def _pick(group: dict[str, object]) -> dict[str, object]:
    return {
        k: group[k]
        for k in (
            "rows",
            "total_results",
            "avg_result_count",
            "zero_result_rows",
            "avg_distance",
            "avg_language_match_ratio",
        )
    }


def test_retrieval_report_json_on_migrated_fixture_matches_independent_sql(migrated_telemetry: Path) -> None:
    result = _invoke("telemetry", "retrieval", "--db", str(migrated_telemetry), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["has_threshold_method"] is True
    assert report["overall"]["rows"] == 30
    assert _pick(report["overall"]) == pytest.approx(_expected_group(migrated_telemetry))
    methods = {g["key"]: _pick(g) for g in report["by_threshold_method"]}
    assert set(methods) == {None, "adaptive", "percentile", "configured"}
    assert methods[None]["rows"] == 25  # the original's rows predate threshold_method
    for key, got in methods.items():
        where, params = ("threshold_method IS NULL", ()) if key is None else ("threshold_method = ?", (key,))
        assert got == pytest.approx(_expected_group(migrated_telemetry, where, params)), key
    repos = {g["key"]: _pick(g) for g in report["by_repo"]}
    assert set(repos) == {r[0] for r in _q(migrated_telemetry, "SELECT DISTINCT repo FROM retrieval_quality")}
    for repo, got in repos.items():
        assert got == pytest.approx(_expected_group(migrated_telemetry, "repo = ?", (repo,)))
    days = {g["key"]: g["rows"] for g in report["by_period"]}
    assert days == dict(
        _q(migrated_telemetry, "SELECT date(created_at), COUNT(*) FROM retrieval_quality GROUP BY 1")
    )


def test_retrieval_report_filters_by_repo_and_buckets_by_week(migrated_telemetry: Path) -> None:
    result = _invoke(
        "telemetry",
        "retrieval",
        "--db",
        str(migrated_telemetry),
        "--repo",
        "acme/web",
        "--by",
        "week",
        "--json",
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert _pick(report["overall"]) == pytest.approx(
        _expected_group(migrated_telemetry, "repo = ?", ("acme/web",))
    )
    weeks = {g["key"]: g["rows"] for g in report["by_period"]}
    assert weeks == dict(
        _q(
            migrated_telemetry,
            "SELECT strftime('%Y-W%W', created_at), COUNT(*) FROM retrieval_quality WHERE repo = 'acme/web' GROUP BY 1",
        )
    )
    since = _invoke(
        "telemetry", "retrieval", "--db", str(migrated_telemetry), "--since", "2999-01-01", "--json"
    )
    assert json.loads(since.stdout)["overall"]["rows"] == 0


def test_retrieval_report_text_tables(migrated_telemetry: Path) -> None:
    result = _invoke("telemetry", "retrieval", "--db", str(migrated_telemetry))
    assert result.exit_code == 0, result.output
    out = result.stdout
    for title in ("Overall", "By threshold method", "By repository", "By day"):
        assert title in out
    for label in ("adaptive", "percentile", "configured", "(not recorded)", "acme/api", "acme/web"):
        assert label in out
    (total,) = _q(migrated_telemetry, "SELECT SUM(result_count) FROM retrieval_quality")[0]
    assert f"│   30 │ {total:>7} │" in out


def test_retrieval_report_works_on_unmigrated_original_file(tmp_path: Path) -> None:
    """A file straight from the original (no threshold_method) still reports; it says an upgrade is due."""
    path = copy_fixture_db("telemetry", tmp_path)
    result = _invoke("telemetry", "retrieval", "--db", str(path), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["has_threshold_method"] is False
    assert [g["key"] for g in report["by_threshold_method"]] == [None]
    assert "kodiai db upgrade" in _invoke("telemetry", "retrieval", "--db", str(path)).stdout
    assert "threshold_method" not in [r[1] for r in _q(path, "PRAGMA table_info(retrieval_quality)")]


def test_retrieval_report_shows_numeric_columns_added_later(migrated_telemetry: Path) -> None:
    """Columns a later additive migration adds (e.g. confidence counts) appear as summed extra columns."""
    conn = sqlite3.connect(migrated_telemetry)
    conn.execute("ALTER TABLE retrieval_quality ADD COLUMN confident_count INTEGER")
    conn.execute("UPDATE retrieval_quality SET confident_count = 2 WHERE delivery_id LIKE 'new-%'")
    conn.commit()
    conn.close()
    report = json.loads(_invoke("telemetry", "retrieval", "--db", str(migrated_telemetry), "--json").stdout)
    assert report["extra_columns"][-1] == "confident_count"
    assert report["overall"]["extra"]["confident_count"] == 10.0
    assert report["overall"]["extra_avg"]["confident_count"] == 2.0
    by_method = {g["key"]: g["extra"]["confident_count"] for g in report["by_threshold_method"]}
    assert by_method == {None: 0.0, "adaptive": 6.0, "configured": 2.0, "percentile": 2.0}
    text = _invoke("telemetry", "retrieval", "--db", str(migrated_telemetry)).stdout
    assert "added columns (sum / avg)" in text and "confident_count" in text and "10 / 2.00" in text


def test_missing_telemetry_db_is_a_clear_error(tmp_path: Path) -> None:
    for cmd in ("usage", "retrieval"):
        result = _invoke("telemetry", cmd, "--db", str(tmp_path / "none.db"))
        assert result.exit_code == 1
        assert "Database not found at" in result.stderr and "Use --db" in result.stderr
    assert not (tmp_path / "none.db").exists()


def test_usage_report_json_matches_sql(migrated_telemetry: Path) -> None:
    result = _invoke("telemetry", "usage", "--db", str(migrated_telemetry), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    n, inp, out, cost = _q(
        migrated_telemetry,
        "SELECT COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cost_usd) FROM executions",
    )[0]
    assert report["summary"] == pytest.approx(
        {
            "totalExecutions": n,
            "totalInputTokens": inp,
            "totalOutputTokens": out,
            "totalTokens": inp + out,
            "totalCost": cost,
        }
    )
    assert report["filters"] == {"since": None, "repo": None}
    expected_repos = _q(
        migrated_telemetry,
        "SELECT repo, COUNT(*), SUM(input_tokens + output_tokens), SUM(cost_usd) c, CAST(ROUND(AVG(duration_ms)) AS INTEGER) "
        "FROM executions GROUP BY repo ORDER BY c DESC",
    )
    assert [tuple(r.values()) for r in report["topRepos"]] == expected_repos
    expected_cats = _q(
        migrated_telemetry,
        "SELECT CASE WHEN event_type LIKE 'pull_request.%' THEN 'review' ELSE 'mention' END k, COUNT(*), "
        "CAST(ROUND(AVG(duration_ms)) AS INTEGER) d, SUM(cost_usd) FROM executions GROUP BY k ORDER BY AVG(duration_ms) DESC",
    )
    assert [tuple(c.values()) for c in report["durationByCategory"]] == expected_cats
    filtered = json.loads(
        _invoke("telemetry", "usage", "--db", str(migrated_telemetry), "--repo", "acme/api", "--json").stdout
    )
    assert (
        filtered["summary"]["totalExecutions"]
        == _q(migrated_telemetry, "SELECT COUNT(*) FROM executions WHERE repo='acme/api'")[0][0]
    )


def test_usage_report_csv_and_text(migrated_telemetry: Path) -> None:
    csv_out = _invoke("telemetry", "usage", "--db", str(migrated_telemetry), "--csv").stdout
    blocks = csv_out.strip().split("\n\n")
    assert len(blocks) == 3
    assert blocks[0].splitlines()[0] == "section,metric,value" and len(blocks[0].splitlines()) == 6
    assert blocks[1].splitlines()[0] == "repo,executions,total_tokens,total_cost,avg_duration_ms"
    assert blocks[1].splitlines()[1].startswith('"acme/')
    assert blocks[2].splitlines()[0] == "category,executions,avg_duration_ms,total_cost"
    text = _invoke("telemetry", "usage", "--db", str(migrated_telemetry)).stdout
    assert "Kodiai Usage Report" in text and "Top Repos by Cost" in text and "Duration by Event Type" in text
    empty = _invoke("telemetry", "usage", "--db", str(migrated_telemetry), "--since", "2999-01-01")
    assert empty.exit_code == 0 and "No executions found." in empty.stdout and "Try adjusting" in empty.stdout


@pytest.mark.parametrize("bad", ["7", "yesterday", "2026/01/01", "d7"])
def test_usage_since_invalid_is_exit_1(migrated_telemetry: Path, bad: str) -> None:
    result = _invoke("telemetry", "usage", "--db", str(migrated_telemetry), "--since", bad)
    assert result.exit_code == 1
    assert f'Invalid --since format: "{bad}"' in result.stderr


def _knowledge_db(tmp_path: Path) -> Path:
    path = tmp_path / "knowledge.db"
    store = KnowledgeStore(path)
    r1 = store.record_review(
        ReviewRecord(repo="acme/web", pr_number=1, findings_total=2, suppressions_applied=1)
    )
    r2 = store.record_review(ReviewRecord(repo="acme/web", pr_number=2, findings_total=1))
    store.record_findings(
        [
            FindingRecord(
                review_id=r1,
                file_path="a.ts",
                severity="major",
                category="security",
                confidence=90,
                title="x",
            ),
            FindingRecord(
                review_id=r1, file_path="b.ts", severity="minor", category="style", confidence=60, title="y"
            ),
            FindingRecord(
                review_id=r2,
                file_path="a.ts",
                severity="critical",
                category="security",
                confidence=75,
                title="z",
            ),
        ]
    )
    store.close()
    return path


def test_stats_json_and_text(tmp_path: Path) -> None:
    db = _knowledge_db(tmp_path)
    result = _invoke("telemetry", "stats", "--repo", "acme/web", "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "repo": "acme/web",
        "since": None,
        "totalReviews": 2,
        "totalFindings": 3,
        "totalSuppressed": 1,
        "avgFindingsPerReview": 1.5,
        "avgConfidence": 75.0,
        "severity": {"critical": 1, "major": 1, "medium": 0, "minor": 1},
        "topFiles": [{"path": "a.ts", "findingCount": 2}, {"path": "b.ts", "findingCount": 1}],
    }
    text = _invoke("telemetry", "stats", "--repo", "acme/web", "--db", str(db), "--since", "30d").stdout
    assert "Kodiai Review Stats: acme/web" in text and "Total Findings: 3 (1 suppressed)" in text
    assert "Avg Findings/PR: 1.5" in text and "Avg Confidence: 75%" in text and "Top Files" in text
    none = _invoke("telemetry", "stats", "--repo", "nobody/x", "--db", str(db))
    assert none.exit_code == 0 and none.stdout.strip() == "No reviews found for nobody/x"
    bad = _invoke("telemetry", "stats", "--repo", "acme/web", "--db", str(db), "--since", "soon")
    assert bad.exit_code == 1 and "Invalid --since value: soon" in bad.stderr


def test_stats_db_resolution_via_env_and_missing_message(tmp_path: Path) -> None:
    db = _knowledge_db(tmp_path)
    via_env = _invoke(
        "telemetry", "stats", "--repo", "acme/web", "--json", env={"KNOWLEDGE_DB_PATH": str(db)}
    )
    assert via_env.exit_code == 0 and json.loads(via_env.stdout)["totalReviews"] == 2
    missing = _invoke("telemetry", "stats", "--repo", "acme/web", "--db", str(tmp_path / "nope.db"))
    assert missing.exit_code == 1
    assert (
        f"No knowledge store found at {tmp_path / 'nope.db'}" in missing.stderr
        and "Resolved via: --db" in missing.stderr
    )


def test_trends_json_descending_and_days_validation(tmp_path: Path) -> None:
    db = _knowledge_db(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE reviews SET created_at = datetime('now', '-2 days') WHERE pr_number = 1")
    conn.commit()
    conn.close()
    result = _invoke("telemetry", "trends", "--repo", "acme/web", "--db", str(db), "--days", "7x", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["date"] for r in rows] == sorted((r["date"] for r in rows), reverse=True)
    assert [
        (r["reviewCount"], r["findingsCount"], r["suppressionsCount"], r["avgConfidence"]) for r in rows
    ] == [
        (1, 1, 0, 75.0),
        (1, 2, 1, 75.0),
    ]
    assert (
        _invoke(
            "telemetry", "trends", "--repo", "acme/web", "--db", str(db), "--days", "1", "--json"
        ).exit_code
        == 0
    )
    for bad in ("0", "abc", "-3"):
        res = _invoke("telemetry", "trends", "--repo", "acme/web", "--db", str(db), "--days", bad)
        assert res.exit_code == 1 and "--days must be a positive integer" in res.stderr
    none = _invoke("telemetry", "trends", "--repo", "nobody/x", "--db", str(db), "--days", "5")
    assert none.stdout.strip() == "No reviews found for nobody/x in the last 5 days"
    assert (
        "Kodiai Review Trends: acme/web (last 30 days)"
        in _invoke("telemetry", "trends", "--repo", "acme/web", "--db", str(db)).stdout
    )


@pytest.mark.parametrize("cmd", ["stats", "trends"])
def test_repo_is_required_for_knowledge_reports(tmp_path: Path, cmd: str) -> None:
    result = _invoke("telemetry", cmd, "--db", str(_knowledge_db(tmp_path)))
    assert result.exit_code == 1
    assert result.stderr.startswith("--repo is required") and "Usage: kodiai telemetry" in result.stderr


def _feedback_telemetry(tmp_path: Path) -> Path:
    """A new telemetry DB (every migration) with retrievals that recorded feedback and older-style rows that
    did not (NULL feedback columns, as rows written before migration 0101)."""
    path = tmp_path / "telemetry.db"
    store = TelemetryStore(path)
    rows = [
        ("acme/api", 3, {"feedback_positive": 1, "feedback_negative": 2, "feedback_rejected": 1}),
        ("acme/api", 2, {"feedback_positive": 0, "feedback_negative": 1, "feedback_rejected": 1}),
        ("acme/api", 4, {"feedback_positive": 2, "feedback_negative": 0, "feedback_rejected": 0}),
        ("acme/api", 5, {}),
        ("acme/web", 1, {}),
        ("acme/web", 0, {}),
    ]
    for i, (repo, count, feedback) in enumerate(rows):
        store.record_retrieval_quality(
            RetrievalQualityRecord(
                delivery_id=f"fb-{i}",
                repo=repo,
                pr_number=i,
                event_type="pull_request.opened",
                result_count=count,
                threshold_method="adaptive",
                **feedback,
            )
        )
    store.close()
    return path


def test_retrieval_report_feedback_sums_per_repo(tmp_path: Path) -> None:
    db = _feedback_telemetry(tmp_path)
    result = _invoke("telemetry", "retrieval", "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["has_feedback"] is True
    fields = (
        "feedback_positive",
        "feedback_negative",
        "feedback_rejected",
        "feedback_rows",
        "feedback_unknown_rows",
    )
    by_repo = {g["key"]: tuple(g[f] for f in fields) for g in report["by_repo"]}
    assert by_repo == {"acme/api": (3, 3, 2, 3, 1), "acme/web": (None, None, None, 0, 2)}
    assert tuple(report["overall"][f] for f in fields) == (3, 3, 2, 3, 3)
    # independent SQL over the rows that recorded feedback
    assert _q(
        db,
        "SELECT SUM(feedback_positive), SUM(feedback_negative), SUM(feedback_rejected) FROM retrieval_quality "
        "WHERE repo = 'acme/api'",
    )[0] == (3, 3, 2)
    # the existing fields are unchanged
    api = next(g for g in report["by_repo"] if g["key"] == "acme/api")
    assert (api["rows"], api["total_results"], api["zero_result_rows"]) == (4, 14, 0)
    assert api["extra"]["feedback_negative"] == 3.0
    text = _invoke("telemetry", "retrieval", "--db", str(db)).stdout
    assert "Feedback carried by retrieved memories, by repository" in text
    assert "│ (all)    │      15 │           3 │           3 │                 2 │        3 of 6 │" in text
    assert "│ acme/api │      14 │           3 │           3 │                 2 │        1 of 4 │" in text
    assert "│ acme/web │       1 │           ? │           ? │                 ? │        2 of 2 │" in text
    assert "their feedback is unknown, not counted" in text
    assert "feedback_positive" not in text  # not repeated in the generic added-columns tables
    only_web = json.loads(
        _invoke("telemetry", "retrieval", "--db", str(db), "--repo", "acme/web", "--json").stdout
    )
    assert (
        only_web["overall"]["feedback_positive"] is None and only_web["overall"]["feedback_unknown_rows"] == 2
    )


def test_retrieval_feedback_on_upgraded_and_original_files(migrated_telemetry: Path, tmp_path: Path) -> None:
    """Rows the original wrote have no feedback: unknown, not zero; a file without the columns says so."""
    report = json.loads(_invoke("telemetry", "retrieval", "--db", str(migrated_telemetry), "--json").stdout)
    assert report["has_feedback"] is True
    assert report["overall"]["feedback_positive"] is None
    assert report["overall"]["feedback_unknown_rows"] == report["overall"]["rows"] == 30
    (tmp_path / "original").mkdir()
    original = copy_fixture_db("telemetry", tmp_path / "original")
    old = json.loads(_invoke("telemetry", "retrieval", "--db", str(original), "--json").stdout)
    assert old["has_feedback"] is False and old["overall"]["feedback_unknown_rows"] == old["overall"]["rows"]
    text = _invoke("telemetry", "retrieval", "--db", str(original)).stdout
    assert "predates the feedback columns" in text and "Feedback carried" not in text
