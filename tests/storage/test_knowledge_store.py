"""Knowledge store (behaviour P6.2, checklist P8.3) on real SQLite files and on a real PostgreSQL.

The ``store`` fixture runs each test on both (``db_backend``); ``sqlite_store`` tests check what only
SQLite has (WAL, pragmas)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import (
    DepBumpMergeHistoryRecord,
    FeedbackReactionRecord,
    FindingRecord,
    GlobalPatternRecord,
    ReviewRecord,
    SuppressionLogEntry,
    confidence_band,
)
from kodiai.text.fingerprint import bare_fingerprint_finding_title, fingerprint_finding_title
from support.db_backends import DbBackend

REPO = "acme/widgets"


INTEGRITY_ERRORS = (sqlite3.IntegrityError, psycopg.IntegrityError)
_BACKEND_OF: dict[int, DbBackend] = {}


@pytest.fixture
def store(db_backend: DbBackend) -> Iterator[KnowledgeStore]:
    s = KnowledgeStore(db_backend.target("knowledge"))
    _BACKEND_OF[id(s)] = db_backend
    yield s
    s.close()
    del _BACKEND_OF[id(s)]


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[KnowledgeStore]:
    s = KnowledgeStore(tmp_path / "knowledge.db")
    yield s
    s.close()


def _sql(store: KnowledgeStore, sql: str, params: tuple[object, ...] = ()) -> list[Any]:
    """Run ``sql`` on a second connection to the store's database (rows by position and by name)."""
    backend = _BACKEND_OF.get(id(store))
    if backend is None:  # a sqlite_store
        conn = sqlite3.connect(store.path)
        conn.row_factory = sqlite3.Row
        try:
            with conn:
                return conn.execute(sql, params).fetchall()
        finally:
            conn.close()
    with backend.connect("knowledge") as db:
        if sql.lstrip().upper().startswith("SELECT"):
            return db.query(sql, params)
        db.execute(sql, params)
        return []


def _review(store: KnowledgeStore, **kw: object) -> int:
    fields: dict[str, object] = {"repo": REPO, "pr_number": 7, "head_sha": "h1", "delivery_id": "d1"}
    fields.update(kw)
    return store.record_review(ReviewRecord.model_validate(fields))


def _finding(review_id: int, **kw: object) -> FindingRecord:
    fields: dict[str, object] = {
        "review_id": review_id,
        "file_path": "src/app.ts",
        "start_line": 10,
        "end_line": 12,
        "severity": "major",
        "category": "correctness",
        "confidence": 80,
        "title": "Missing auth check",
    }
    fields.update(kw)
    return FindingRecord.model_validate(fields)


def _reaction(review_id: int, finding_id: int, **kw: object) -> FeedbackReactionRecord:
    fields: dict[str, object] = {
        "repo": REPO,
        "review_id": review_id,
        "finding_id": finding_id,
        "comment_id": 555,
        "comment_surface": "pull_request_review_comment",
        "reaction_id": 1001,
        "reaction_content": "-1",
        "reactor_login": "alice",
        "reacted_at": "2026-01-02T03:04:05Z",
        "severity": "major",
        "category": "correctness",
        "file_path": "src/app.ts",
        "title": "Missing auth check",
    }
    fields.update(kw)
    return FeedbackReactionRecord.model_validate(fields)


def test_8_3_01_record_review_returns_positive_id_and_persists(store: KnowledgeStore) -> None:
    """P8.3 #1: recordReview returns a positive integer id and the row persists."""
    rid = _review(store, findings_total=3, model="claude", conclusion="success")
    assert isinstance(rid, int) and rid > 0
    row = _sql(store, "SELECT * FROM reviews WHERE id = ?", (rid,))[0]
    assert (row["repo"], row["pr_number"], row["findings_total"], row["conclusion"]) == (
        REPO,
        7,
        3,
        "success",
    )
    assert row["config_snapshot"] is None and row["duration_ms"] is None


def test_8_3_02_record_findings_links_review_and_stores_suppressed_as_int(store: KnowledgeStore) -> None:
    """P8.3 #2: recordFindings inserts findings linked to their review (suppressed stored as 0)."""
    rid = _review(store)
    store.record_findings(
        [_finding(rid), _finding(rid, title="Other", suppressed=True, suppression_pattern="glob:*")]
    )
    rows = _sql(store, "SELECT review_id, suppressed, suppression_pattern FROM findings ORDER BY id")
    assert [tuple(r) for r in rows] == [(rid, 0, None), (rid, 1, "glob:*")]


def test_8_3_03_comment_linkage_columns_persist(store: KnowledgeStore) -> None:
    """P8.3 #3: comment_id / comment_surface / review_output_key persist."""
    rid = _review(store)
    store.record_findings(
        [_finding(rid, comment_id=99, comment_surface="pull_request_review_comment", review_output_key="k1")]
    )
    row = _sql(store, "SELECT comment_id, comment_surface, review_output_key FROM findings")[0]
    assert tuple(row) == (99, "pull_request_review_comment", "k1")


def test_8_3_04_feedback_reactions_append_only_and_deduplicated(store: KnowledgeStore) -> None:
    """P8.3 #4: reactions are append-only, de-duplicated on (repo, comment, reaction), carry finding metadata."""
    rid = _review(store)
    store.record_findings([_finding(rid)])
    fid = _sql(store, "SELECT id FROM findings")[0][0]
    assert store.record_feedback_reactions([_reaction(rid, fid)]) == 1
    assert store.record_feedback_reactions([_reaction(rid, fid), _reaction(rid, fid, reaction_id=1002)]) == 1
    rows = _sql(
        store, "SELECT reaction_id, severity, category, file_path, title FROM feedback_reactions ORDER BY id"
    )
    assert [tuple(r) for r in rows] == [
        (1001, "major", "correctness", "src/app.ts", "Missing auth check"),
        (1002, "major", "correctness", "src/app.ts", "Missing auth check"),
    ]


def test_8_3_05_list_recent_finding_comment_candidates(store: KnowledgeStore) -> None:
    """P8.3 #5: only linked findings, newest first, with their comment fields."""
    rid = _review(store)
    other = _review(store, repo="other/repo")
    store.record_findings(
        [
            _finding(rid, comment_id=1, comment_surface="s", review_output_key="k", title="First"),
            _finding(rid, title="Unlinked"),
            _finding(rid, comment_id=2, comment_surface="s", review_output_key="k", title="Second"),
            _finding(other, comment_id=3, comment_surface="s", review_output_key="k"),
        ]
    )
    got = store.list_recent_finding_comment_candidates(REPO)
    assert [(c.title, c.comment_id, c.repo, c.review_id) for c in got] == [
        ("Second", 2, REPO, rid),
        ("First", 1, REPO, rid),
    ]
    assert got[0].created_at and got[0].review_output_key == "k"
    assert len(store.list_recent_finding_comment_candidates(REPO, limit=0)) == 1


def test_8_3_06_get_finding_by_comment_id(store: KnowledgeStore) -> None:
    """P8.3 #6: metadata for a known comment id, None for an unknown one."""
    rid = _review(store)
    store.record_findings(
        [_finding(rid, comment_id=77, comment_surface="s", review_output_key="k", start_line=4)]
    )
    got = store.get_finding_by_comment_id(REPO, 77)
    assert got is not None
    assert got.model_dump() == {
        "severity": "major",
        "category": "correctness",
        "file_path": "src/app.ts",
        "start_line": 4,
        "title": "Missing auth check",
    }
    assert store.get_finding_by_comment_id(REPO, 78) is None
    assert store.get_finding_by_comment_id("other/repo", 77) is None


def test_8_3_07_suppression_log_stores_ids_as_json_text(store: KnowledgeStore) -> None:
    """P8.3 #7: suppression log rows store the finding ids as JSON text [11,12]."""
    rid = _review(store)
    store.record_suppression_log(
        [
            SuppressionLogEntry(review_id=rid, pattern="glob:*.md", matched_count=2, finding_ids=[11, 12]),
            SuppressionLogEntry(review_id=rid, pattern="x"),
        ]
    )
    rows = _sql(store, "SELECT pattern, matched_count, finding_ids FROM suppression_log ORDER BY id")
    assert [tuple(r) for r in rows] == [("glob:*.md", 2, "[11,12]"), ("x", 0, None)]


def test_8_3_08_global_pattern_upsert_sums_counts(store: KnowledgeStore) -> None:
    """P8.3 #8: the global-pattern upsert sums counts (2+3=5); count ≤ 0 is skipped."""
    fp = fingerprint_finding_title("Missing auth check")
    for n in (2, 3, 0, -4):
        store.record_global_pattern(
            GlobalPatternRecord(
                severity="major", category="security", confidence_band="high", pattern_fingerprint=fp, count=n
            )
        )
    rows = _sql(store, "SELECT pattern_fingerprint, count FROM global_patterns")
    assert [tuple(r) for r in rows] == [(fp, 5)]
    assert (confidence_band(75), confidence_band(74.9), confidence_band(50), confidence_band(49)) == (
        "high",
        "medium",
        "medium",
        "low",
    )


def test_q1_global_pattern_bare_hex_rows_from_older_db_still_match(store: KnowledgeStore) -> None:
    """PARITY review Q1: one fp- form everywhere; a bare-hex row an older DB wrote still matches and is added to."""
    bare = bare_fingerprint_finding_title("Missing auth check")
    _sql(
        store,
        "INSERT INTO global_patterns (severity, category, confidence_band, pattern_fingerprint, count) "
        "VALUES ('major', 'security', 'high', ?, 4)",
        (bare,),
    )
    full = fingerprint_finding_title("Missing auth check")
    assert full == "fp-a955e9cf"
    assert store.get_global_pattern_count("major", "security", "high", full) == 4
    store.record_global_pattern(
        GlobalPatternRecord(
            severity="major", category="security", confidence_band="high", pattern_fingerprint=full, count=1
        )
    )
    assert store.get_global_pattern_count("major", "security", "high", bare) == 5
    assert len(_sql(store, "SELECT * FROM global_patterns")) == 1
    store.record_global_pattern(
        GlobalPatternRecord(
            severity="minor", category="style", confidence_band="low", pattern_fingerprint=bare, count=1
        )
    )
    assert (
        _sql(store, "SELECT pattern_fingerprint FROM global_patterns WHERE severity = 'minor'")[0][0] == full
    )


def test_8_3_09_dep_bump_history_first_write_wins(store: KnowledgeStore) -> None:
    """P8.3 #9: the dep-bump history insert is idempotent per (repo, PR); the first write wins."""
    first = DepBumpMergeHistoryRecord(
        repo=REPO, pr_number=5, package_name="lodash", new_version="4.17.21", is_security_bump=True
    )
    assert store.record_dep_bump_merge_history(first) is True
    assert store.record_dep_bump_merge_history(first.model_copy(update={"package_name": "other"})) is False
    store.record_dep_bump_merge_history(
        DepBumpMergeHistoryRecord(repo=REPO, pr_number=6, is_security_bump=False)
    )
    store.record_dep_bump_merge_history(DepBumpMergeHistoryRecord(repo=REPO, pr_number=8))
    rows = _sql(
        store,
        "SELECT pr_number, package_name, is_security_bump FROM dep_bump_merge_history ORDER BY pr_number",
    )
    assert [tuple(r) for r in rows] == [(5, "lodash", 1), (6, None, 0), (8, None, None)]


def _stats_fixture(store: KnowledgeStore) -> None:
    r1 = _review(store, findings_total=3, suppressions_applied=1)
    r2 = _review(store, pr_number=8, findings_total=1, suppressions_applied=0)
    store.record_findings(
        [
            _finding(r1, severity="critical", confidence=95, file_path="b.ts"),
            _finding(r1, severity="major", confidence=90, file_path="a.ts"),
            _finding(r1, severity="minor", confidence=88, file_path="a.ts", suppressed=True),
            _finding(r2, severity="major", confidence=85, file_path="b.ts"),
        ]
    )


def test_8_3_10_repo_stats(store: KnowledgeStore) -> None:
    """P8.3 #10: totals, severity breakdown, suppressed count, averages (89.5) and top files."""
    _stats_fixture(store)
    stats = store.get_repo_stats(REPO)
    assert stats.total_reviews == 2
    assert stats.total_findings == 4
    assert stats.total_suppressed == 1
    assert stats.findings_by_severity == {"critical": 1, "major": 2, "medium": 0, "minor": 1}
    assert stats.avg_findings_per_review == 2.0
    assert stats.avg_confidence == 89.5
    assert [(f.path, f.finding_count) for f in stats.top_files] == [("a.ts", 2), ("b.ts", 2)]
    _sql(store, "UPDATE reviews SET created_at = datetime('now', '-40 days') WHERE pr_number = 8")
    recent = store.get_repo_stats(REPO, since_days=30)
    assert (recent.total_reviews, recent.total_findings, recent.findings_by_severity["major"]) == (1, 3, 1)


def test_8_3_11_repo_trends(store: KnowledgeStore) -> None:
    """P8.3 #11: daily review / finding / suppression counts and the average confidence (65)."""
    r1 = _review(store, suppressions_applied=2)
    r2 = _review(store, pr_number=9, suppressions_applied=1)
    store.record_findings([_finding(r1, confidence=60), _finding(r2, confidence=70)])
    old = _review(store, pr_number=10, suppressions_applied=5)
    _sql(store, "UPDATE reviews SET created_at = datetime('now', '-3 days') WHERE id = ?", (old,))
    trends = store.get_repo_trends(REPO, 7)
    assert [t.model_dump() for t in trends][1:] == [
        {
            "date": str(_sql(store, "SELECT date('now')")[0][0]),  # PostgreSQL: a date, same text
            "review_count": 2,
            "findings_count": 2,
            "suppressions_count": 3,
            "avg_confidence": 65.0,
        }
    ]
    assert (trends[0].review_count, trends[0].findings_count, trends[0].avg_confidence) == (1, 0, 0.0)
    assert len(store.get_repo_trends(REPO, 2)) == 1


def test_8_3_12_unknown_repo_gives_zeroed_stats_and_empty_trends(store: KnowledgeStore) -> None:
    """P8.3 #12: an unknown repo → zeroed stats and empty trends."""
    _stats_fixture(store)
    stats = store.get_repo_stats("nobody/here")
    assert stats.model_dump() == {
        "total_reviews": 0,
        "total_findings": 0,
        "findings_by_severity": {"critical": 0, "major": 0, "medium": 0, "minor": 0},
        "total_suppressed": 0,
        "avg_findings_per_review": 0.0,
        "avg_confidence": 0.0,
        "top_files": [],
    }
    assert store.get_repo_trends("nobody/here", 30) == []


def test_8_3_13_foreign_keys_enforced(store: KnowledgeStore) -> None:
    """P8.3 #13: findings and reactions that reference missing parents are rejected; the batch rolls back."""
    rid = _review(store)
    with pytest.raises(INTEGRITY_ERRORS):
        store.record_findings([_finding(rid), _finding(9999)])
    assert _sql(store, "SELECT COUNT(*) FROM findings")[0][0] == 0
    with pytest.raises(INTEGRITY_ERRORS):
        store.record_feedback_reactions([_reaction(rid, 4242)])
    assert _sql(store, "SELECT COUNT(*) FROM feedback_reactions")[0][0] == 0


def test_8_3_14_wal_and_foreign_keys_declared(sqlite_store: KnowledgeStore) -> None:
    """P8.3 #14: WAL mode is on; findings / suppression_log / feedback_reactions declare their foreign keys."""
    store = sqlite_store
    assert _sql(store, "PRAGMA journal_mode")[0][0] == "wal"
    fks = {
        t: {(r["table"], r["from"]) for r in _sql(store, f"PRAGMA foreign_key_list({t})")}
        for t in ("findings", "suppression_log", "feedback_reactions")
    }
    assert fks == {
        "findings": {("reviews", "review_id")},
        "suppression_log": {("reviews", "review_id")},
        "feedback_reactions": {("reviews", "review_id"), ("findings", "finding_id")},
    }


def test_8_3_15_write_after_close_throws(db_backend: DbBackend) -> None:
    """P8.3 #15: a write after close throws; close never throws."""
    s = KnowledgeStore(db_backend.target("knowledge"))
    s.close()
    s.close()
    with pytest.raises(sqlite3.ProgrammingError):
        _review(s)
    with pytest.raises(sqlite3.ProgrammingError):
        s.record_findings([_finding(1)])


def _claim(store: KnowledgeStore, head: str = "h1", delivery: str = "d1", base: str = "b1"):
    return store.check_and_claim_run(
        repo=REPO, pr_number=7, base_sha=base, head_sha=head, delivery_id=delivery, action="opened"
    )


def test_8_3_16_first_claim_is_new_with_exact_key(store: KnowledgeStore) -> None:
    """P8.3 #16: a first run → new, with the exact run-key format."""
    claim = _claim(store)
    assert claim.model_dump() == {
        "should_process": True,
        "reason": "new",
        "run_key": "acme/widgets:pr-7:base-b1:head-h1",
        "superseded_run_keys": [],
    }
    assert _sql(store, "SELECT status FROM run_state")[0][0] == "pending"


def test_8_3_17_same_sha_pair_is_duplicate(store: KnowledgeStore) -> None:
    """P8.3 #17: the same SHA pair → duplicate."""
    _claim(store)
    claim = _claim(store)
    assert (claim.should_process, claim.reason, claim.superseded_run_keys) == (False, "duplicate", [])


def test_8_3_18_new_head_supersedes_prior_run(store: KnowledgeStore) -> None:
    """P8.3 #18: a new head SHA supersedes the prior run (status and superseded_by set), completed ones too."""
    first = _claim(store)
    store.complete_run(first.run_key)
    second = _claim(store, head="h2")
    assert (second.reason, second.superseded_run_keys) == ("superseded-prior", [first.run_key])
    row = _sql(store, "SELECT status, superseded_by FROM run_state WHERE run_key = ?", (first.run_key,))[0]
    assert tuple(row) == ("superseded", second.run_key)


def test_8_3_19_complete_run_sets_status_and_time(store: KnowledgeStore) -> None:
    """P8.3 #19: completeRun sets status completed and completed_at."""
    claim = _claim(store)
    store.complete_run(claim.run_key)
    row = _sql(store, "SELECT status, completed_at FROM run_state")[0]
    assert row["status"] == "completed" and row["completed_at"]


def test_8_3_20_purge_old_runs_deletes_backdated_completed_run(store: KnowledgeStore) -> None:
    """P8.3 #20: purgeOldRuns(30) deletes a completed run back-dated by 60 days; pending rows are kept."""
    done = _claim(store)
    store.complete_run(done.run_key)
    store.check_and_claim_run(
        repo=REPO, pr_number=8, base_sha="b", head_sha="h", delivery_id="d", action="opened"
    )
    _sql(store, "UPDATE run_state SET created_at = datetime('now', '-60 days')")
    assert store.purge_old_runs(30) == 1
    assert [r[0] for r in _sql(store, "SELECT status FROM run_state")] == ["pending"]


def test_purge_old_runs_superseded_after_seven_days_and_stale_author_cache(store: KnowledgeStore) -> None:
    """P6.2 purgeOldRuns: superseded rows after min(retention, 7) days, plus author_cache rows older than 7 days."""
    old = _claim(store)
    _claim(store, head="h2")
    _sql(
        store,
        "UPDATE run_state SET created_at = datetime('now', '-8 days') WHERE run_key = ?",
        (old.run_key,),
    )
    store.upsert_author_cache(
        repo=REPO, author_login="bob", tier="core", author_association="MEMBER", pr_count=3
    )
    _sql(store, "UPDATE author_cache SET cached_at = datetime('now', '-8 days')")
    assert store.purge_old_runs(30) == 2
    assert _sql(store, "SELECT COUNT(*) FROM author_cache")[0][0] == 0


def test_author_cache_ttl_and_upsert(store: KnowledgeStore) -> None:
    """P6.2: the cache row is returned only within 24 h; upsert overwrites and resets cached_at."""
    assert store.get_author_cache(REPO, "bob") is None
    store.upsert_author_cache(
        repo=REPO, author_login="bob", tier="first-time", author_association="NONE", pr_count=0
    )
    store.upsert_author_cache(
        repo=REPO, author_login="bob", tier="core", author_association="MEMBER", pr_count=12
    )
    got = store.get_author_cache(REPO, "bob")
    assert got is not None and (got.tier, got.author_association, got.pr_count) == ("core", "MEMBER", 12)
    _sql(store, "UPDATE author_cache SET cached_at = datetime('now', '-25 hours')")
    assert store.get_author_cache(REPO, "bob") is None
    assert store.purge_stale_author_cache(1) == 1


def test_8_3_21_other_delivery_same_sha_pair_is_duplicate(store: KnowledgeStore) -> None:
    """P8.3 #21: a different delivery id with the same SHA pair is still a duplicate with the same key."""
    first = _claim(store, delivery="d1")
    again = _claim(store, delivery="d2")
    assert (again.reason, again.run_key) == ("duplicate", first.run_key)


def test_8_3_22_last_reviewed_head_none_without_completed_run(store: KnowledgeStore) -> None:
    """P8.3 #22: getLastReviewedHeadSha is None with no runs or only a pending run."""
    assert store.get_last_reviewed_head_sha(REPO, 7) is None
    _claim(store)
    assert store.get_last_reviewed_head_sha(REPO, 7) is None


def test_8_3_23_last_reviewed_head_is_newest_completed(store: KnowledgeStore) -> None:
    """P8.3 #23: the newest completed head (after a second run completes)."""
    store.complete_run(_claim(store).run_key)
    assert store.get_last_reviewed_head_sha(REPO, 7) == "h1"
    second = _claim(store, head="h2")
    store.complete_run(second.run_key)
    assert store.get_last_reviewed_head_sha(REPO, 7) == "h2"


def test_8_3_24_prior_review_findings(store: KnowledgeStore) -> None:
    """P8.3 #24: only unsuppressed findings of the latest completed head, in insertion order, with a fingerprint
    (fp- form, PARITY Q1) and nullable end line / comment id."""
    old = _review(store, head_sha="h1")
    store.record_findings([_finding(old, title="Old finding")])
    store.complete_run(_claim(store, head="h1").run_key)
    new = _review(store, head_sha="h2")
    store.record_findings(
        [
            _finding(new, title="SQL injection in raw query path", end_line=None, file_path="db.ts"),
            _finding(new, title="Suppressed", suppressed=True),
            _finding(
                new,
                title="Unused variable detected",
                comment_id=31,
                comment_surface="s",
                review_output_key="k",
            ),
        ]
    )
    store.complete_run(_claim(store, head="h2").run_key)
    prior = store.get_prior_review_findings(REPO, 7)
    assert [p.model_dump() for p in prior] == [
        {
            "file_path": "db.ts",
            "title": "SQL injection in raw query path",
            "title_fingerprint": "fp-96353bde",
            "severity": "major",
            "category": "correctness",
            "start_line": 10,
            "end_line": None,
            "comment_id": None,
        },
        {
            "file_path": "src/app.ts",
            "title": "Unused variable detected",
            "title_fingerprint": "fp-286fe3ed",
            "severity": "major",
            "category": "correctness",
            "start_line": 10,
            "end_line": 12,
            "comment_id": 31,
        },
    ]


def test_q1_prior_finding_lookup_matches_both_fingerprint_forms(store: KnowledgeStore) -> None:
    """PARITY review Q1: the handler's `<path>:fp-…` lookup matches, and so does a bare-hex key from an older DB."""
    rid = _review(store, head_sha="h1")
    store.record_findings([_finding(rid, title="Unused variable detected")])
    store.complete_run(_claim(store).run_key)
    prior = store.get_prior_review_findings(REPO, 7)[0]
    assert prior.key == "src/app.ts:fp-286fe3ed"
    assert store.find_prior_finding(REPO, 7, "src/app.ts", "fp-286fe3ed") == prior
    assert store.find_prior_finding(REPO, 7, "src/app.ts", "286fe3ed") == prior
    assert store.find_prior_finding(REPO, 7, "src/other.ts", "fp-286fe3ed") is None
    assert store.find_prior_finding(REPO, 7, "src/app.ts", "fp-00000000") is None


def test_8_3_25_prior_findings_empty_without_completed_review(store: KnowledgeStore) -> None:
    """P8.3 #25: empty when there is no completed review."""
    rid = _review(store)
    store.record_findings([_finding(rid)])
    _claim(store)
    assert store.get_prior_review_findings(REPO, 7) == []


def test_aggregate_feedback_patterns(store: KnowledgeStore) -> None:
    """P6.2 aggregateFeedbackPatterns: grouped by exact title, ≥ 1 thumbs-down, distinct reactors / PRs among
    the -1s, severity/category from the newest row; case variants are separate groups with one fingerprint."""
    r1 = _review(store, pr_number=1)
    r2 = _review(store, pr_number=2)
    store.record_findings([_finding(r1), _finding(r2)])
    f1, f2 = (r[0] for r in _sql(store, "SELECT id FROM findings ORDER BY id"))
    store.record_feedback_reactions(
        [
            _reaction(r1, f1, reaction_id=1, reactor_login="alice"),
            _reaction(r1, f1, reaction_id=2, reactor_login="alice", comment_id=556),
            _reaction(
                r2, f2, reaction_id=3, reactor_login="bob", comment_id=557, severity="minor", category="style"
            ),
            _reaction(r2, f2, reaction_id=4, reactor_login="carol", reaction_content="+1", comment_id=558),
            _reaction(r1, f1, reaction_id=5, title="missing AUTH check!", comment_id=559),
            _reaction(r1, f1, reaction_id=6, title="Only praised", reaction_content="+1", comment_id=560),
        ]
    )
    patterns = store.aggregate_feedback_patterns(REPO)
    assert [p.model_dump() for p in patterns] == [
        {
            "fingerprint": "fp-a955e9cf",
            "thumbs_down_count": 3,
            "thumbs_up_count": 1,
            "distinct_reactors": 2,
            "distinct_prs": 2,
            "severity": "major",
            "category": "correctness",
            "sample_title": "Missing auth check",
        },
        {
            "fingerprint": fingerprint_finding_title("missing AUTH check!"),
            "thumbs_down_count": 1,
            "thumbs_up_count": 0,
            "distinct_reactors": 1,
            "distinct_prs": 1,
            "severity": "major",
            "category": "correctness",
            "sample_title": "missing AUTH check!",
        },
    ]
    assert store.list_feedback_suppressions(REPO) == patterns
    assert store.aggregate_feedback_patterns("other/repo") == []
    assert store.clear_feedback_suppressions(REPO) == 6
    assert store.aggregate_feedback_patterns(REPO) == []


def test_empty_batches_are_noops_and_checkpoint_runs(store: KnowledgeStore) -> None:
    store.record_findings([])
    store.record_suppression_log([])
    assert store.record_feedback_reactions([]) == 0
    assert store.checkpoint()[0] == 0


def test_concurrent_claims_from_threads_and_two_connections_yield_one_new(db_backend: DbBackend) -> None:
    """Run claims are atomic (SQLite: BEGIN IMMEDIATE; PostgreSQL: the store's advisory lock): 40 racing
    claims of one SHA pair through two stores (two connections or pools, as a second process or replica
    would have) give exactly one `new`."""
    from concurrent.futures import ThreadPoolExecutor

    a = KnowledgeStore(db_backend.target("knowledge"))
    b = KnowledgeStore(db_backend.target("knowledge"))
    _BACKEND_OF[id(a)] = db_backend
    try:

        def claim(i: int) -> str:
            s = a if i % 2 else b
            return s.check_and_claim_run(
                repo=REPO, pr_number=1, base_sha="b", head_sha="h", delivery_id=f"d{i}", action="opened"
            ).reason

        with ThreadPoolExecutor(max_workers=8) as pool:
            reasons = list(pool.map(claim, range(40)))
        assert reasons.count("new") == 1 and reasons.count("duplicate") == 39
        assert len(_sql(a, "SELECT * FROM run_state")) == 1
    finally:
        a.close()
        b.close()


def test_writes_accept_mappings_and_same_named_models(store: KnowledgeStore) -> None:
    """Handlers may pass a dict or their own pydantic model with the same field names; bad input is rejected
    before anything is written."""
    from pydantic import BaseModel, ValidationError

    class HandlerFinding(BaseModel):
        review_id: int
        file_path: str
        severity: str
        category: str
        confidence: int
        title: str
        suppressed: bool = False

    rid = store.record_review({"repo": REPO, "pr_number": 3, "findings_total": 1})
    store.record_findings(
        [
            HandlerFinding(
                review_id=rid, file_path="x.py", severity="minor", category="style", confidence=40, title="t"
            )
        ]
    )
    store.record_suppression_log([{"review_id": rid, "pattern": "p", "finding_ids": [1]}])
    with pytest.raises(ValidationError):
        store.record_findings([{"review_id": rid, "file_path": "y.py"}])
    rows = _sql(
        store, "SELECT f.file_path, r.findings_total FROM findings f JOIN reviews r ON r.id = f.review_id"
    )
    assert [tuple(r) for r in rows] == [("x.py", 1)]
    assert _sql(store, "SELECT finding_ids FROM suppression_log")[0][0] == "[1]"


def test_a_finding_title_quoting_nul_is_stored_on_both_databases(db_backend: DbBackend) -> None:
    """Model output may quote a NUL byte. SQLite stores it; PostgreSQL's text refuses it, which failed the
    review's whole knowledge write on PostgreSQL only. There it is stored as U+FFFD."""
    s = KnowledgeStore(db_backend.target("knowledge"))
    try:
        review_id = s.record_review(ReviewRecord(repo="acme/api", pr_number=1))
        s.record_findings(
            [
                FindingRecord(
                    review_id=review_id,
                    file_path="src/a\x00.py",
                    severity="major",
                    category="correctness",
                    confidence=80,
                    title="strcpy stops at \x00 here",
                )
            ]
        )
    finally:
        s.close()
    row = db_backend.rows("knowledge", "SELECT file_path, title FROM findings")
    nul = "\x00" if db_backend.name == "sqlite" else "\ufffd"
    assert row == [{"file_path": f"src/a{nul}.py", "title": f"strcpy stops at {nul} here"}]
