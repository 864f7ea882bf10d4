"""Forget and restore recorded where the memory store is not open (a ``web`` replica's dashboard), then
applied by the workers' maintenance — here in one process over SQLite and a real LanceDB store."""

from __future__ import annotations

from pathlib import Path

from kodiai.dashboard.actions import forget_memory, restore_forgotten
from kodiai.learning.governance_apply import sweep_governance
from kodiai.learning.setup import finding_memory_text, open_store_for_provider
from kodiai.learning.types import LearningMemoryRecord
from kodiai.storage.database import SqliteDatabase
from kodiai.storage.knowledge import KnowledgeStore
from support.review_harness import BagOfWordsEmbedder
from support.seed_dashboard import seed_dashboard

REPO, FINDING = "acme/api", 500


def test_a_forget_and_a_restore_recorded_without_the_store_are_applied_by_the_maintenance(
    tmp_path: Path,
) -> None:
    knowledge_path = str(tmp_path / "knowledge.db")
    seed_dashboard(str(tmp_path / "telemetry.db"), knowledge_path, None)
    knowledge = KnowledgeStore(knowledge_path)
    db = SqliteDatabase.open(knowledge_path)
    embedder = BagOfWordsEmbedder()
    store = open_store_for_provider(str(tmp_path / "memory.lance"), embedder)
    assert store is not None
    finding = knowledge.get_finding_by_comment_id(REPO, FINDING)
    assert finding is not None
    row = db.fetch_one("SELECT severity, category, file_path FROM findings WHERE comment_id = ?", (FINDING,))
    assert row is not None
    text = finding_memory_text(row[0], row[1], finding.title, row[2])
    original = embedder.generate(text, "document")
    store.write_memory(
        LearningMemoryRecord(
            repo=REPO, owner="acme", finding_id=FINDING, review_id=1, source_repo=REPO,
            finding_text=finding.title, severity=row[0], category=row[1], file_path=row[2],
            outcome="accepted", embedding_model=embedder.model, embedding_dim=embedder.dimensions,
        ),
        original,
    )  # fmt: skip
    try:
        # the web replica: no memory store, so the forget is recorded and waits
        done = forget_memory(knowledge, db, None, repo=REPO, finding_id=FINDING, actor="alice")
        assert done.done and "worker" in done.message
        assert store.has_memory(REPO, FINDING, "accepted")
        assert FINDING in knowledge.retired_findings(REPO)  # feedback sync already skips it

        counts = sweep_governance(knowledge_path, store, embedder)  # the workers' periodic run
        assert (counts.forgets, counts.removed) == (1, 1)
        assert not store.has_memory(REPO, FINDING, "accepted")
        applied = db.fetch_one(
            "SELECT removed, applied_at FROM memory_governance WHERE finding_id = ?", (FINDING,)
        )
        assert applied is not None and applied[0] == 1 and applied[1] is not None
        assert sweep_governance(knowledge_path, store, embedder).forgets == 0  # applied once

        restored = restore_forgotten(db, None, None, repo=REPO, finding_id=FINDING, actor="alice")
        assert restored.done and not store.has_memory(REPO, FINDING, "accepted")
        assert FINDING not in knowledge.retired_findings(REPO)
        assert sweep_governance(knowledge_path, store, embedder).written == 1
        back = [r for r in store.list_records(REPO) if r.finding_id == FINDING]
        assert [(r.outcome, r.finding_text) for r in back] == [("accepted", finding.title)]
        again = restore_forgotten(db, None, None, repo=REPO, finding_id=FINDING, actor="alice")
        assert not again.done  # nothing left to restore
        # forgotten again after the restore: a new forget, applied by the next run
        assert forget_memory(knowledge, db, None, repo=REPO, finding_id=FINDING, actor="bob").done
        assert sweep_governance(knowledge_path, store, embedder).removed == 1
        assert not store.has_memory(REPO, FINDING, "accepted")
    finally:
        store.close()
        db.close()
        knowledge.close()
