"""Seeded stores for the dashboard's tests and benchmark: the shared seed (:mod:`support.seed_stores`) plus
what only the dashboard reads — reviews with their delivery ids, ``retrieval_hits`` written through the
knowledge store, and job-journal rows of two installations.

Figures the tests rely on (memory = finding comment id):
- 501 (acme/api): kept in rv1 and rv2; rv1 has 2 👍 and 3 👎, rv2 one 👎 → 2 up, 4 down, precision 1/3.
- 500 (acme/api): kept in rv2 only (1 👎) → flagged (only 👎). 503 (acme/api): cut in rv1, never kept.
- 502 (acme/web): kept in rv3. 504 (acme/api): never looked at.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

from kodiai.jobs.journal_rows import PayloadCodec
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_hits import RetrievalHit
from kodiai.storage.opening import open_migrated
from support.db_backends import open_target
from support.seed_stores import seed_knowledge, seed_telemetry

INSTALLATION = 12345
OTHER_INSTALLATION = 999
HITS = (
    # delivery, repo, pr, memory id, finding id, kept rank (None = cut)
    ("rv1", "acme/api", 1, 11, 501, 1),
    ("rv1", "acme/api", 1, 13, 503, None),
    ("rv2", "acme/api", 2, 11, 501, 1),
    ("rv2", "acme/api", 2, 10, 500, 2),
    ("rv3", "acme/web", 3, 12, 502, 1),
)
JOBS = (
    ("job-dead-1", INSTALLATION, "dead", 3, "RuntimeError: boom"),
    ("job-done-1", INSTALLATION, "done", 1, None),
    ("job-pending-1", INSTALLATION, "pending", 0, None),
    ("job-dead-other", OTHER_INSTALLATION, "dead", 3, "OSError: disk"),
)


def seed_dashboard(telemetry: str, knowledge: str, jobs: str | None) -> None:
    """``jobs`` None: the journal is seeded later (:func:`seed_jobs`, e.g. once a server has opened it)."""
    seed_telemetry(telemetry)
    seed_knowledge(knowledge)
    db = open_target(knowledge, "knowledge")
    try:
        for review_id in (1, 2, 3):
            db.execute("UPDATE reviews SET delivery_id = ? WHERE id = ?", (f"rv{review_id}", review_id))
        db.execute(
            "INSERT INTO feedback_reactions (repo, review_id, finding_id, comment_id, comment_surface, reaction_id,"
            " reaction_content, reactor_login, severity, category, file_path, title)"
            " VALUES ('acme/api', 2, 2, 501, 'pull_request_review_comment', 999, '-1', 'user9', 'major',"
            " 'correctness', 'src/f.py', 'Finding 1')",
        )
    finally:
        db.close()
    store = KnowledgeStore(knowledge)
    try:
        store.record_retrieval_hits(
            [
                RetrievalHit(
                    delivery_id=d,
                    repo=repo,
                    pr_number=pr,
                    memory_id=memory,
                    finding_id=finding,
                    source_repo=repo,
                    outcome="accepted",
                    distance=0.1 * memory / 10,
                    adjusted_distance=0.1 * memory / 10,
                    kept=rank is not None,
                    kept_rank=rank,
                )
                for d, repo, pr, memory, finding, rank in HITS
            ]
        )
    finally:
        store.close()
    if jobs is not None:
        seed_jobs(jobs)


def seed_jobs(jobs: str) -> None:
    db = open_migrated(jobs, "jobs")
    try:
        now = datetime.now(UTC).isoformat()
        for delivery, installation, status, attempts, error in JOBS:
            db.execute(
                "INSERT INTO delivery_journal (delivery_id, event_name, action, installation_id, status,"
                " attempts, received_at, error) VALUES (?, 'pull_request', 'opened', ?, ?, ?, ?, ?)",
                (delivery, installation, status, attempts, now, error),
            )
            if status == "dead":  # kept with its body, as the journal keeps a dead delivery's
                body = json.dumps({"action": "opened", "installation": {"id": installation}}).encode()
                db.execute(
                    "INSERT INTO delivery_payloads (seq, payload)"
                    " VALUES ((SELECT seq FROM delivery_journal WHERE delivery_id = ?), ?)",
                    (delivery, PayloadCodec().encode(body)),
                )
    finally:
        db.close()


def comparable(value: Any) -> Any:
    """Figures comparable across summation orders: floats to 12 significant digits."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return comparable(dataclasses.asdict(value))
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [comparable(v) for v in value]
    return value
