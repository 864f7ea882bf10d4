"""Every SQL example in README.md and docs/*.md that targets the telemetry or knowledge database runs
unchanged on SQLite and on PostgreSQL (``DATABASE_URL``), on the same rows, with the same answer.

Both databases are filled through the stores (the rows a server writes), with the same timestamps, so an
example's answer can be compared row for row. Each example names its database (``-- db: telemetry``, or
the default file name on its first line or just before the block; tests/test_docs_stand_alone.py enforces
that).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlparse

from kodiai.storage.database import Database, SqliteDatabase, open_postgres
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
from support.postgres import empty_all_tables

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NAMES = re.compile(r"kodiai-(telemetry|knowledge|jobs)\.db|^-- db: (telemetry|knowledge|jobs)\b")
NOW = datetime.now(UTC).replace(microsecond=0)


def _examples() -> list[tuple[str, str, str]]:
    """``(id, database, statement)`` for each statement of each ```sql block naming telemetry or knowledge."""
    out: list[tuple[str, str, str]] = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip() != "```sql":
                continue
            end = lines.index("```", i + 1)
            block = "\n".join(lines[i + 1 : end])
            named = [m for near in [*lines[max(0, i - 2) : i], lines[i + 1]] for m in NAMES.finditer(near)]
            database = next((m.group(1) or m.group(2) for m in named), None)
            if database not in ("telemetry", "knowledge"):
                continue
            for n, statement in enumerate(
                s for s in sqlparse.split(block) if sqlparse.format(s, strip_comments=True).strip()
            ):
                out.append(
                    (f"{page.relative_to(ROOT)}:{i + 1}#{n + 1}", database, statement.strip().rstrip(";"))
                )
    return out


EXAMPLES = _examples()


def _at(hours_ago: float) -> str:
    return sqlite_utc(NOW - timedelta(hours=hours_ago))


def _seed_telemetry(target: str) -> None:
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
    db = _open(target, "telemetry")
    try:
        for i, ago in enumerate(hours):
            db.execute("UPDATE executions SET created_at = ? WHERE id = ?", (_at(ago), i + 1))
        for i in range(len(methods)):
            db.execute("UPDATE retrieval_quality SET created_at = ? WHERE id = ?", (_at(20 * i + 1), i + 1))
    finally:
        db.close()


def _seed_knowledge(target: str) -> None:
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
    db = _open(target, "knowledge")
    try:
        for i in range(3):
            db.execute("UPDATE run_state SET created_at = ? WHERE id = ?", (_at(3 * i), i + 1))
        for i in range(3):
            db.execute("UPDATE reviews SET created_at = ? WHERE id = ?", (_at(10 * i), i + 1))
    finally:
        db.close()


def _open(target: str, name: str) -> Database:
    return open_postgres(target, name) if target.startswith("postgresql://") else SqliteDatabase.open(target)


@pytest.fixture(scope="module")
def seeded(
    tmp_path_factory: pytest.TempPathFactory, _postgres_migrated: str
) -> Iterator[dict[str, dict[str, str]]]:
    """The same rows in SQLite files and in the session's PostgreSQL database (emptied before and after)."""
    tmp = tmp_path_factory.mktemp("docs-sql")
    empty_all_tables(_postgres_migrated)
    targets = {
        "sqlite": {
            "telemetry": str(tmp / "kodiai-telemetry.db"),
            "knowledge": str(tmp / "kodiai-knowledge.db"),
        },
        "postgres": {"telemetry": _postgres_migrated, "knowledge": _postgres_migrated},
    }
    for backend in targets.values():
        _seed_telemetry(backend["telemetry"])
        _seed_knowledge(backend["knowledge"])
    try:
        yield targets
    finally:
        empty_all_tables(_postgres_migrated)


def _run(target: str, name: str, sql: str) -> list[tuple[Any, ...]]:
    db = _open(target, name)
    try:
        return db.fetch_all(sql)
    finally:
        db.close()


def _normal(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """SQLite's view of a row: booleans are 1/0, a date is its text, floats compared to 6 places."""

    def value(v: Any) -> Any:
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, date):
            return v.isoformat()
        if isinstance(v, float):
            return round(v, 6)
        return v

    return sorted((tuple(value(v) for v in row) for row in rows), key=repr)


def test_the_docs_have_examples_for_both_databases() -> None:
    databases = {db for _, db, _ in EXAMPLES}
    assert databases == {"telemetry", "knowledge"}
    assert len(EXAMPLES) >= 15
    assert any(p.startswith("README.md") for p, _, _ in EXAMPLES)


@pytest.mark.parametrize(("where", "database", "sql"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_example_gives_the_same_answer_on_sqlite_and_postgres(
    seeded: dict[str, dict[str, str]], where: str, database: str, sql: str
) -> None:
    on_sqlite = _run(seeded["sqlite"][database], database, sql)
    on_postgres = _run(seeded["postgres"][database], database, sql)
    assert on_sqlite and on_postgres, f"{where}: the seeded rows must give the example something to show"
    if "_yoyo_migration" in sql:  # bookkeeping: when each id was applied differs, and one PG database has all
        return
    assert _normal(on_postgres) == _normal(on_sqlite), where
