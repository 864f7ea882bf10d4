"""The PR's earlier reviews read from a real knowledge database (the re-review scope's input): a read-only
connection to the SQLite file, or the PostgreSQL database of ``DATABASE_URL``."""

from __future__ import annotations

from kodiai.storage.connection import connect
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_pr_reviews import earlier_review_ids, re_review_scope
from kodiai.storage.opening import open_postgres
from support.db_backends import DbBackend

REPO = "acme/api"


def test_earlier_reviews_of_one_pr_from_a_real_database(db_backend: DbBackend) -> None:
    target = db_backend.target("knowledge")
    store = KnowledgeStore(target)
    first = store.record_review({"repo": REPO, "pr_number": 7, "head_sha": "a"})
    store.record_review({"repo": REPO, "pr_number": 8, "head_sha": "b"})  # another PR
    store.record_review({"repo": "acme/web", "pr_number": 7, "head_sha": "c"})  # same number, other repo
    second = store.record_review({"repo": REPO, "pr_number": 7, "head_sha": "d"})
    current = store.record_review({"repo": REPO, "pr_number": 7, "head_sha": "e"})
    store.close()
    conn = open_postgres(target, "knowledge") if db_backend.url else connect(target, read_only=True)
    try:
        assert earlier_review_ids(conn, REPO, 7) == frozenset({first, second, current})
        assert earlier_review_ids(conn, REPO, 7, current_review_id=current) == frozenset({first, second})
        assert re_review_scope(conn, REPO, 7, current_review_id=current) == frozenset({first, second})
        assert earlier_review_ids(conn, REPO, 9) == frozenset()
        assert re_review_scope(conn, REPO, 9) is None  # never reviewed: a first review, not a re-review
        assert re_review_scope(conn, REPO, 7, current_review_id=first) is None
    finally:
        conn.close()
