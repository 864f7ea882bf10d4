"""Learned-memory outcome rows from human thumbs (beyond the original: PARITY.md "learned-memory outcomes").

A finding's memory (``finding_id`` = its comment id, behaviour R1 step 50) gets a ``thumbs_up`` row
while a writer's 👍 stands and a ``thumbs_down`` row while a writer's 👎 stands (only writers' reactions
are stored, :mod:`.trust`), so retrieval can tell later
reviews how the team judged it. A withdrawn or changed reaction removes the row it no longer supports.
Blocking (LanceDB, the embedder, SQLite): the caller runs :func:`sync_memory_outcomes` in a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kodiai.feedback.trust import untrusted_comments
from kodiai.handler_kit.deps import LearnedMemory
from kodiai.learning.setup import finding_memory_text, memory_record_fields
from kodiai.learning.types import LearningMemoryRecord, MemoryOutcome
from kodiai.storage.feedback_tally import FeedbackTally
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import FindingCommentCandidate


@dataclass
class MemorySyncCounts:
    written: int = 0
    retired: int = 0
    failed: int = 0
    """Rows that should exist but could not be embedded (the embedder returned nothing)."""


def wanted_outcomes(tally: FeedbackTally) -> dict[MemoryOutcome, bool]:
    """Which thumbs outcome rows the finding's current tally supports."""
    return {"thumbs_up": tally.thumbs_up > 0, "thumbs_down": tally.thumbs_down > 0}


def sync_memory_outcomes(
    knowledge: KnowledgeStore,
    memory: LearnedMemory,
    owner: str,
    repo: str,
    candidates: Sequence[FindingCommentCandidate],
) -> MemorySyncCounts:
    """Bring each candidate's thumbs rows in line with its tally; findings a maintainer retired get none,
    nor do held-back findings of an untrusted author's PR that no writer has confirmed yet (issue 23).

    ``has_memory`` is checked first so an existing row is never embedded again; writes go in one batch.
    """
    counts = MemorySyncCounts()
    retired = knowledge.retired_findings(repo)
    held_back = untrusted_comments(knowledge, repo, [c.comment_id for c in candidates])
    live = [c for c in candidates if c.comment_id not in retired and c.comment_id not in held_back]
    if not live:
        return counts
    tallies = knowledge.feedback_tallies([(repo, c.comment_id) for c in live])
    store, embeddings = memory.store, memory.embeddings
    records: list[LearningMemoryRecord] = []
    vectors: list[np.ndarray] = []
    for candidate in live:
        tally = tallies.get((repo, candidate.comment_id), FeedbackTally())
        vector: np.ndarray | None = None
        for outcome, wanted in wanted_outcomes(tally).items():
            present = store.has_memory(repo, candidate.comment_id, outcome)
            if present and not wanted:
                counts.retired += store.retire(repo, finding_id=candidate.comment_id, outcome=outcome)
            if present or not wanted:
                continue
            if vector is None:  # one embedding per finding, whichever outcomes it needs
                text = finding_memory_text(
                    candidate.severity, candidate.category, candidate.title, candidate.file_path
                )
                vector = embeddings.generate(text, "document")
            if vector is None:
                counts.failed += 1
                continue
            records.append(outcome_record(candidate, owner, outcome, memory))
            vectors.append(vector)
    if records:
        ids = store.write_memories(records, vectors)
        counts.written = sum(1 for memory_id in ids if memory_id is not None)
    return counts


def outcome_record(
    candidate: FindingCommentCandidate, owner: str, outcome: MemoryOutcome, memory: LearnedMemory
) -> LearningMemoryRecord:
    """The memory row, with the same fields the review writes for the finding itself."""
    return LearningMemoryRecord(
        repo=candidate.repo,
        owner=owner,
        finding_id=candidate.comment_id,
        review_id=candidate.review_id,
        source_repo=candidate.repo,
        finding_text=candidate.title,
        severity=candidate.severity,
        category=candidate.category,
        file_path=candidate.file_path,
        outcome=outcome,
        stale=False,
        **memory_record_fields(memory.embeddings),
    )
