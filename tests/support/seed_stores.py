"""The same rows in any telemetry and knowledge database, written through the stores (as a server writes
them) with fixed timestamps, so that a query's answer on SQLite and on PostgreSQL can be compared row for
row (the docs' SQL examples, the ``kodiai telemetry`` reports)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import (
    DepBumpMergeHistoryRecord,
    FeedbackReactionRecord,
    FindingRecord,
    PendingMemoryRecord,
    ReviewRecord,
)
from kodiai.storage.telemetry import (
    ExecutionRecord,
    RetrievalQualityRecord,
    SpendEntry,
    TelemetryStore,
    sqlite_utc,
)
from support.db_backends import open_target

NOW = datetime.now(UTC).replace(microsecond=0)


def _at(hours_ago: float) -> str:
    return sqlite_utc(NOW - timedelta(hours=hours_ago))


def seed_telemetry(target: str) -> None:
    store = TelemetryStore(target)
    try:
        hours = [1, 5, 30, 50, 100, 200, 400, 800, 26, 75, 150, 2000]
        for i in range(len(hours)):
            repo = "acme/api" if i % 3 else "acme/web"
            store.record(
                ExecutionRecord(
                    delivery_id=f"d{i}",
                    repo=repo,
                    pr_number=i,
                    event_type="pull_request.opened" if i % 4 else "issue_comment.created",
                    model="claude-sonnet-4",
                    input_tokens=1000 + i,
                    output_tokens=100 * i,
                    cache_read_tokens=10 * i,
                    cache_creation_tokens=i,
                    duration_ms=27720 * (i + 1),  # every average of up to 12 is whole: CAST agrees
                    cost_usd=0.0125 * (i + 1),
                    conclusion="success" if i % 5 else "failure",
                    num_turns=i,
                    stop_reason="end_turn",
                )
            )
        methods = ["adaptive", "percentile", "configured", None, "adaptive", "adaptive", "percentile", None]
        for i, method in enumerate(methods):
            store.record_retrieval_quality(
                RetrievalQualityRecord(
                    delivery_id=f"r{i}",
                    repo="acme/api" if i % 2 else "acme/web",
                    pr_number=i,
                    event_type="pull_request.opened",
                    top_k=5,
                    distance_threshold=0.3 + i / 100,
                    result_count=i % 3,
                    avg_distance=None if i % 3 == 0 else 0.1 * i,
                    language_match_ratio=0.5,
                    threshold_method=method,
                    candidate_count=10 + i,
                    feedback_positive=None if i < 3 else i % 2,
                    feedback_negative=None if i < 3 else 1,
                    feedback_rejected=None if i < 3 else 0,
                )
            )
        for i, ago in enumerate([0.01, 2, 30, 60, 200, 24 * 9]):
            store.record_spend(
                SpendEntry(
                    created_at=NOW - timedelta(hours=ago),
                    installation_id=12345 if i % 2 else 777,
                    repo="acme/api",
                    number=i,
                    delivery_id=f"s{i}",
                    kind="review",
                    outcome="refused" if i in (1, 4) else "run",
                    reason="installation-cap" if i in (1, 4) else None,
                    cost_usd=0.0 if i in (1, 4) else 0.5 * (i + 1),
                )
            )
    finally:
        store.close()
    db = open_target(target, "telemetry")
    try:
        for i, ago in enumerate(hours):
            db.execute("UPDATE executions SET created_at = ? WHERE id = ?", (_at(ago), i + 1))
        for i in range(len(methods)):
            db.execute("UPDATE retrieval_quality SET created_at = ? WHERE id = ?", (_at(20 * i + 1), i + 1))
    finally:
        db.close()


def seed_knowledge(target: str) -> None:
    store = KnowledgeStore(target)
    try:
        reviews = [
            store.record_review(ReviewRecord(repo=repo, pr_number=n, head_sha=f"h{n}", findings_total=2))
            for repo, n in (("acme/api", 1), ("acme/api", 2), ("acme/web", 3))
        ]
        findings = [
            FindingRecord(
                review_id=reviews[i % 3],
                file_path=f"src/f{i}.py",
                severity=("critical", "major", "minor")[i % 3],
                category="correctness",
                confidence=60 + i,
                title=f"Finding {i % 2}",
                suppressed=i == 4,
                comment_id=500 + i,
                comment_surface="pull_request_review_comment",
                review_output_key="k",
            )
            for i in range(5)
        ]
        store.record_findings(findings)
        store.record_feedback_reactions(
            [
                FeedbackReactionRecord(
                    repo="acme/api",
                    review_id=reviews[0],
                    finding_id=1 + i % 2,
                    comment_id=500 + i % 2,
                    comment_surface="pull_request_review_comment",
                    reaction_id=900 + i,
                    reaction_content="-1" if i % 3 else "+1",
                    reactor_login=f"user{i % 2}",
                    reacted_at=_at(i),
                    severity="major",
                    category="correctness",
                    file_path="src/f.py",
                    title=f"Finding {i % 2}",
                )
                for i in range(5)
            ]
        )
        for n, head in ((1, "h1"), (2, "h2"), (3, "h3")):
            store.check_and_claim_run(
                repo="acme/api",
                pr_number=n,
                base_sha="b",
                head_sha=head,
                delivery_id=f"d{n}",
                action="opened",
            )
        store.complete_run("acme/api:pr-3:base-b:head-h3")
        for n, security in ((10, True), (11, False), (12, None)):
            store.record_dep_bump_merge_history(
                DepBumpMergeHistoryRecord(
                    repo="acme/api",
                    pr_number=n,
                    merged_at=_at(n),
                    package_name="requests" if n < 12 else "urllib3",
                    is_security_bump=security,
                )
            )
        store.record_pending_memories(
            [
                PendingMemoryRecord(
                    repo="acme/api",
                    owner="acme",
                    pr_number=4,
                    comment_id=700 + i,
                    finding_text=f"text {i}",
                    severity="major",
                    category="security",
                    file_path="a.py",
                    outcome="accepted",
                    author="outsider",
                    author_access="read",
                )
                for i in range(2)
            ]
        )
    finally:
        store.close()
    db = open_target(target, "knowledge")
    try:
        for i in range(3):
            db.execute("UPDATE run_state SET created_at = ? WHERE id = ?", (_at(3 * i), i + 1))
        for i in range(3):
            db.execute("UPDATE reviews SET created_at = ? WHERE id = ?", (_at(10 * i), i + 1))
    finally:
        db.close()
