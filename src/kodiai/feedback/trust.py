"""Whose word the learned memory takes (issue 23): only people with write permission teach it.

Two rules, one module:

- **Reactions** count only from users whose permission on the repository is write or above, looked up
  through GitHub (cached briefly, :mod:`kodiai.github.permissions`). A lookup that fails counts nothing:
  the reaction is neither stored nor, when it was stored before, removed (an outage must not erase
  verified feedback). Everything downstream (tallies, thumbs outcome rows, auto-suppression) reads only
  what feedback sync stored, so this one filter covers them all.
- **Findings of an untrusted author's PR** wait in ``pending_memories`` (:mod:`kodiai.review.record`)
  until a writer decides: a net-positive writer tally on the finding's comment, or the PR's merge, promotes
  it into the memory store; a net-negative writer tally, or closing the PR unmerged, discards it.

The blocking helpers (SQLite, LanceDB, the embedder) run in a worker thread; the async one only asks GitHub.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kodiai.github.permissions import AccessLevel, access_level
from kodiai.github.rest import RestApi
from kodiai.handler_kit.deps import LearnedMemory
from kodiai.learning.setup import finding_memory_text, memory_record_fields
from kodiai.learning.types import LearningMemoryRecord
from kodiai.storage.feedback_tally import FeedbackTally
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import DecisionHow, FeedbackReactionRecord, PendingMemory, PendingStatus

#: A writer's decision on a held-back finding may still change while it is not promoted.
UNDECIDED: tuple[PendingStatus, ...] = ("pending", "discarded")


async def reactor_access(
    rest: RestApi, owner: str, repo: str, logins: Iterable[str], known: dict[str, AccessLevel]
) -> dict[str, AccessLevel]:
    """The access level of each login, asking GitHub once per login per sync (``known`` is that memo)."""
    for login in logins:
        key = login.lower()
        if key not in known:
            known[key] = await access_level(rest, owner, repo, login)
    return {login: known[login.lower()] for login in logins}


def split_by_access(
    records: Sequence[FeedbackReactionRecord], levels: Mapping[str, AccessLevel]
) -> tuple[list[FeedbackReactionRecord], list[int]]:
    """``(writers' reactions, reaction ids of reactors whose permission is unknown)``. Readers' reactions
    are in neither list: they are dropped, and removed from the store if they were there."""
    kept: list[FeedbackReactionRecord] = []
    unknown: list[int] = []
    for record in records:
        level = levels.get(record.reactor_login, "unknown")
        if level == "write":
            kept.append(record)
        elif level == "unknown":
            unknown.append(record.reaction_id)
    return kept, unknown


def pending_record(row: PendingMemory, memory: LearnedMemory) -> LearningMemoryRecord:
    """The memory row the review would have written for the finding, had its author been trusted."""
    return LearningMemoryRecord(
        repo=row.repo,
        owner=row.owner,
        finding_id=row.comment_id,
        review_id=row.review_id or 0,
        source_repo=row.repo,
        finding_text=row.finding_text,
        severity=row.severity,
        category=row.category,
        file_path=row.file_path,
        outcome=row.outcome,
        stale=False,
        **memory_record_fields(memory.embeddings),
    )


def promote(
    knowledge: KnowledgeStore,
    memory: LearnedMemory,
    rows: Sequence[PendingMemory],
    *,
    by: str | None,
    how: DecisionHow,
) -> int:
    """Write ``rows`` to the memory store and mark them promoted; returns how many were promoted.

    A row the embedder cannot embed stays as it was (the next decision retries it); a finding a maintainer
    retired with ``@kodiai forget`` is never written back. The store skips a ``(finding, outcome)`` it
    already holds, so a promotion retried after a crash between the two writes adds nothing twice.
    """
    if not rows:
        return 0
    retired = knowledge.retired_findings(rows[0].repo)
    wanted = [r for r in rows if r.comment_id is None or r.comment_id not in retired]
    texts = [finding_memory_text(r.severity, r.category, r.finding_text, r.file_path) for r in wanted]
    vectors = memory.embeddings.generate_many(texts, "document") if texts else []
    records, kept, ids = [], [], []
    for row, vector in zip(wanted, vectors, strict=True):
        if vector is None:
            continue
        records.append(pending_record(row, memory))
        kept.append(vector)
        ids.append(row.id)
    if records:
        memory.store.write_memories(records, kept)
    return knowledge.decide_pending_memories(ids, "promoted", by=by, how=how, only_from=UNDECIDED)


@dataclass
class DecisionCounts:
    promoted: int = 0
    discarded: int = 0


def first_reactor(knowledge: KnowledgeStore, repo: str, comment_id: int, content: str) -> str | None:
    """The earliest stored (hence writer's) reaction of ``content`` on the comment: who decided."""
    for row in knowledge.reactions_for(repo, [comment_id]).get(comment_id, []):
        if row.reaction_content == content:
            return row.reactor_login
    return None


def decide_from_feedback(
    knowledge: KnowledgeStore, memory: LearnedMemory | None, repo: str, comment_ids: Collection[int]
) -> DecisionCounts:
    """Apply the writers' thumbs (the only ones stored) to the held-back findings posted as ``comment_ids``.

    Net-positive → promoted (needs the memory store); net-negative → a pending finding is discarded, and a
    later merge leaves it so. A writer who changes a 👎 to a 👍 later still promotes it.
    """
    counts = DecisionCounts()
    held = {
        cid: row
        for cid, row in knowledge.pending_memories_by_comment(repo, list(comment_ids)).items()
        if row.status in UNDECIDED
    }
    if not held:
        return counts
    tallies = knowledge.feedback_tallies([(repo, cid) for cid in held])
    for cid, row in held.items():
        tally = tallies.get((repo, cid), FeedbackTally())
        if tally.net > 0 and memory is not None:
            by = first_reactor(knowledge, repo, cid, "+1")
            counts.promoted += promote(knowledge, memory, [row], by=by, how="thumbs_up")
        elif tally.net < 0 and row.status == "pending":
            by = first_reactor(knowledge, repo, cid, "-1")
            counts.discarded += knowledge.decide_pending_memories(
                [row.id], "discarded", by=by, how="thumbs_down"
            )
    return counts


def untrusted_comments(knowledge: KnowledgeStore, repo: str, comment_ids: Collection[int]) -> set[int]:
    """Comments whose finding is held back (not promoted): they get no thumbs outcome rows either."""
    held = knowledge.pending_memories_by_comment(repo, list(comment_ids))
    return {cid for cid, row in held.items() if row.status != "promoted"}


def decide_on_close(
    knowledge: KnowledgeStore,
    memory: LearnedMemory | None,
    repo: str,
    pr_number: int,
    *,
    merged: bool,
    by: str | None,
) -> DecisionCounts:
    """``pull_request.closed``: merging promotes the PR's held-back findings (except those a writer's 👎
    discarded); closing unmerged discards the pending ones. Reopening and merging later still promotes."""
    counts = DecisionCounts()
    if not merged:
        rows = knowledge.pending_memories_for_pr(repo, pr_number, ("pending",))
        counts.discarded = knowledge.decide_pending_memories(
            [r.id for r in rows], "discarded", by=by, how="closed"
        )
        return counts
    if memory is None:
        return counts  # nothing to write to: they stay pending, a later merge event or 👍 can promote
    rows = [
        r
        for r in knowledge.pending_memories_for_pr(repo, pr_number, UNDECIDED)
        if r.status == "pending" or r.decided_how == "closed"
    ]
    tallies = knowledge.feedback_tallies([(repo, r.comment_id) for r in rows if r.comment_id is not None])
    rejected = [
        r
        for r in rows
        if r.comment_id is not None and tallies.get((repo, r.comment_id), FeedbackTally()).net < 0
    ]
    counts.discarded = knowledge.decide_pending_memories(
        [r.id for r in rejected if r.status == "pending"], "discarded", by=None, how="thumbs_down"
    )
    accepted = [r for r in rows if r not in rejected]
    counts.promoted = promote(knowledge, memory, accepted, by=by, how="merged")
    return counts
