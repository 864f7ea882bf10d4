"""Provenance of learned memories: where each came from and what happened to it since (`kodiai memory list`).

A memory's ``finding_id`` is the GitHub review-comment id of the finding (behaviour R1 step 50), so the
knowledge DB's findings, kept reactions and governance rows all join on it. A finding with several outcome
rows (``accepted`` then ``thumbs_down``, say) is one entry; a finding retired with ``@kodiai forget`` no
longer has rows in LanceDB and is listed from its governance row; a memory added with ``@kodiai remember:``
has no finding and is matched to its governance row by memory id. A finding of an untrusted author's PR
(issue 23) carries who confirmed it and how (a writer's 👍, or the merge); one still waiting, or discarded,
is listed from its ``pending_memories`` row with status ``pending`` / ``discarded``.

Assembly is pure (:func:`assemble` over records and :class:`KnowledgeFacts`); :func:`load_facts` is the only
step that reads, through the small :class:`KnowledgeSource` protocol that :class:`KnowledgeStore` and the
read-only reader in :mod:`kodiai.learning.provenance_sources` both satisfy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel

from kodiai.learning.types import LearningMemoryRecord
from kodiai.storage.knowledge_models import (
    FindingProvenance,
    MemoryGovernanceRecord,
    PendingMemory,
    ReactionRow,
)

MemoryStatus = Literal["live", "stale", "retired", "absent", "pending", "discarded"]
"""``live``: retrievable rows; ``stale``: only rows of another embedding model; ``retired``: forgotten
(no rows left); ``absent``: a governance ``remember`` row whose memory is not in this store (another
embedder's table, or purged); ``pending``: a finding of an untrusted author's PR waiting for a writer's
confirmation (never retrieved); ``discarded``: one a writer rejected, or whose PR was closed unmerged."""

HistoryKind = Literal["outcome", "reaction", "remembered", "retired", "held", "confirmed", "discarded"]

REVIEW_COMMENT_SURFACE = "pull_request_review_comment"


class KnowledgeSource(Protocol):
    """What provenance reads from the knowledge DB."""

    def finding_provenance(self, repo: str, comment_ids: Sequence[int]) -> dict[int, FindingProvenance]: ...

    def reactions_for(self, repo: str, comment_ids: Sequence[int]) -> dict[int, list[ReactionRow]]: ...

    def list_memory_governance(self, repo: str | None = None) -> list[MemoryGovernanceRecord]: ...

    def list_pending_memories(self, repo: str | None = None) -> list[PendingMemory]: ...


class HistoryEvent(BaseModel):
    """One step of a memory's history, in time order."""

    at: str | None
    kind: HistoryKind
    outcome: str | None = None
    """``outcome``: the memory row's outcome (accepted, suppressed, thumbs_up, thumbs_down)."""
    memory_id: int | None = None
    reaction: str | None = None
    """``reaction``: GitHub's content, ``+1`` or ``-1``."""
    actor: str | None = None
    """Who reacted, remembered, retired, confirmed or discarded (``held``: the PR's author)."""
    how: str | None = None
    """``confirmed`` / ``discarded``: ``thumbs_up``, ``merged``, ``thumbs_down`` or ``closed``; ``held``:
    the author's access (``read`` or ``unknown``)."""
    removed: int | None = None
    """``retired``: memory rows removed."""
    comment_url: str | None = None
    """``remembered`` / ``retired``: the command's comment."""


class MemoryProvenance(BaseModel):
    """One learned memory (all outcome rows of one finding, or one hand-added memory) and its provenance."""

    status: MemoryStatus
    repo: str
    finding_id: int | None
    memory_ids: list[int]
    outcomes: list[str]
    """Distinct outcomes of the rows still stored, oldest first."""
    stale: bool = False
    pr_number: int | None = None
    comment_url: str | None = None
    """The finding's review comment, or for a hand-added memory the ``remember`` command's comment."""
    finding_text: str | None = None
    severity: str | None = None
    category: str | None = None
    file_path: str | None = None
    created_at: str | None = None
    """When the first memory row was written (for a retired finding: when the finding was posted)."""
    posted_at: str | None = None
    """When the finding was recorded by the review (knowledge DB)."""
    thumbs_up: int = 0
    thumbs_down: int = 0
    added_by: str | None = None
    added_at: str | None = None
    retired_by: str | None = None
    retired_at: str | None = None
    removed: int | None = None
    retire_comment_url: str | None = None
    held_author: str | None = None
    """The PR author whose findings were held back (no write access), for a finding that had to wait."""
    confirmed_by: str | None = None
    confirmed_how: str | None = None
    """``thumbs_up`` (a writer's 👍) or ``merged``."""
    confirmed_at: str | None = None
    history: list[HistoryEvent] = []


@dataclass
class KnowledgeFacts:
    """Everything provenance needs from the knowledge DB, keyed by ``(repo, comment_id)``."""

    findings: dict[tuple[str, int], FindingProvenance] = field(default_factory=dict)
    reactions: dict[tuple[str, int], list[ReactionRow]] = field(default_factory=dict)
    governance: list[MemoryGovernanceRecord] = field(default_factory=list)
    pending: list[PendingMemory] = field(default_factory=list)


def comment_url(repo: str, pr_number: int, comment_id: int, surface: str | None = None) -> str:
    """The GitHub URL of a finding's comment (an inline review comment unless ``surface`` says otherwise)."""
    base = f"https://github.com/{repo}/pull/{pr_number}"
    if surface == "issue_comment":
        return f"{base}#issuecomment-{comment_id}"
    if surface == "pull_request_review":
        return f"{base}#pullrequestreview-{comment_id}"
    return f"{base}#discussion_r{comment_id}"


def _source_repo(record: LearningMemoryRecord) -> str:
    return record.source_repo or record.repo


def load_facts(
    knowledge: KnowledgeSource, records: Iterable[LearningMemoryRecord], repo: str | None = None
) -> KnowledgeFacts:
    """Read the findings, reactions and governance rows that ``records`` (and retired findings) refer to."""
    governance = knowledge.list_memory_governance(repo)
    pending = knowledge.list_pending_memories(repo)
    wanted: dict[str, set[int]] = {}
    for record in records:
        if record.finding_id is not None:
            wanted.setdefault(_source_repo(record), set()).add(int(record.finding_id))
    for row in governance:
        if row.action == "forget" and row.finding_id is not None:
            wanted.setdefault(row.repo, set()).add(int(row.finding_id))
    for held in pending:
        if held.comment_id is not None and held.status != "promoted":
            wanted.setdefault(held.repo, set()).add(int(held.comment_id))
    facts = KnowledgeFacts(governance=governance, pending=pending)
    for source, ids in sorted(wanted.items()):
        ordered = sorted(ids)
        for cid, found in knowledge.finding_provenance(source, ordered).items():
            facts.findings[(source, cid)] = found
        for cid, rows in knowledge.reactions_for(source, ordered).items():
            facts.reactions[(source, cid)] = rows
    return facts


def _time_key(at: str | None) -> tuple[bool, str]:
    """Sort SQLite (``YYYY-MM-DD HH:MM:SS``) and ISO (``…T…Z``) times together; unknown times last."""
    return (at is None, (at or "").replace("T", " ").rstrip("Z"))


def _distinct(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _from_rows(rows: list[LearningMemoryRecord], facts: KnowledgeFacts) -> MemoryProvenance:
    """One entry for a finding's rows (or a lone hand-added row), with its finding and reactions."""
    rows = sorted(rows, key=lambda r: (_time_key(r.created_at), r.id or 0))
    first = rows[0]
    entry = MemoryProvenance(
        status="stale" if all(r.stale for r in rows) else "live",
        repo=first.repo,
        finding_id=first.finding_id,
        memory_ids=[r.id for r in rows if r.id is not None],
        outcomes=_distinct(r.outcome for r in rows),
        stale=any(r.stale for r in rows),
        finding_text=first.finding_text,
        severity=first.severity,
        category=first.category,
        file_path=first.file_path,
        created_at=first.created_at,
        history=[
            HistoryEvent(at=r.created_at, kind="outcome", outcome=r.outcome, memory_id=r.id) for r in rows
        ],
    )
    if first.finding_id is not None:
        _attach_finding(entry, _source_repo(first), int(first.finding_id), facts)
    return entry


def _attach_finding(entry: MemoryProvenance, source: str, finding_id: int, facts: KnowledgeFacts) -> None:
    found = facts.findings.get((source, finding_id))
    if found is not None:
        entry.pr_number = found.pr_number
        entry.comment_url = comment_url(source, found.pr_number, finding_id, found.comment_surface)
        entry.posted_at = found.created_at
    reactions = facts.reactions.get((source, finding_id), [])
    thumbs = Counter(r.reaction_content for r in reactions)
    entry.thumbs_up, entry.thumbs_down = thumbs["+1"], thumbs["-1"]
    entry.history.extend(
        HistoryEvent(at=r.reacted_at, kind="reaction", reaction=r.reaction_content, actor=r.reactor_login)
        for r in reactions
    )


def _apply_forget(entry: MemoryProvenance, rows: list[MemoryGovernanceRecord]) -> None:
    """Record who retired the finding (the latest command; rows removed summed over all of them)."""
    latest = rows[-1]
    entry.retired_by, entry.retired_at = latest.actor, latest.created_at
    entry.retire_comment_url = latest.comment_url
    entry.removed = sum(r.removed for r in rows)
    entry.history.extend(
        HistoryEvent(
            at=r.created_at, kind="retired", actor=r.actor, removed=r.removed, comment_url=r.comment_url
        )
        for r in rows
    )


def _retired_entry(rows: list[MemoryGovernanceRecord], facts: KnowledgeFacts) -> MemoryProvenance:
    """A finding forgotten from GitHub: no memory rows remain, so the governance row tells its story."""
    first = rows[0]
    entry = MemoryProvenance(
        status="retired",
        repo=first.repo,
        finding_id=first.finding_id,
        memory_ids=[],
        outcomes=[],
        pr_number=first.pr_number,
        finding_text=first.text,
    )
    if first.finding_id is not None:
        _attach_finding(entry, first.repo, int(first.finding_id), facts)
        found = facts.findings.get((first.repo, int(first.finding_id)))
        if found is not None:
            entry.finding_text = entry.finding_text or found.title
            entry.created_at = found.created_at
    _apply_forget(entry, rows)
    return entry


def _apply_remember(entry: MemoryProvenance, row: MemoryGovernanceRecord) -> None:
    entry.added_by, entry.added_at = row.actor, row.created_at
    entry.comment_url = entry.comment_url or row.comment_url
    entry.pr_number = entry.pr_number if entry.pr_number is not None else row.pr_number
    entry.history.append(
        HistoryEvent(
            at=row.created_at,
            kind="remembered",
            actor=row.actor,
            memory_id=row.memory_id,
            comment_url=row.comment_url,
        )
    )


def _remembered(entry: MemoryProvenance, row: MemoryGovernanceRecord) -> bool:
    """Whether ``row`` wrote ``entry``: same id, same repo, no finding (ids of another embedder's table
    may collide, so the id alone is not enough)."""
    return entry.finding_id is None and entry.repo == row.repo


def _absent_entry(row: MemoryGovernanceRecord) -> MemoryProvenance:
    entry = MemoryProvenance(
        status="absent",
        repo=row.repo,
        finding_id=None,
        memory_ids=[row.memory_id] if row.memory_id is not None else [],
        outcomes=[],
        finding_text=row.text,
    )
    _apply_remember(entry, row)
    return entry


def assemble(records: Sequence[LearningMemoryRecord], facts: KnowledgeFacts | None) -> list[MemoryProvenance]:
    """One entry per finding (its outcome rows grouped), per hand-added memory, and per retired finding.

    Order: by repo, then stored memories by their first id, then retired/absent ones by time. Without
    ``facts`` (no knowledge DB) only what LanceDB holds is listed, provenance fields left empty.
    """
    facts = facts or KnowledgeFacts()
    groups: dict[tuple[str, int], list[LearningMemoryRecord]] = {}
    entries: list[MemoryProvenance] = []
    for record in records:
        if record.finding_id is None:
            entries.append(_from_rows([record], facts))
        else:
            groups.setdefault((record.repo, int(record.finding_id)), []).append(record)
    by_finding = {key: _from_rows(rows, facts) for key, rows in groups.items()}
    entries.extend(by_finding.values())
    by_memory_id = {mid: entry for entry in entries for mid in entry.memory_ids}
    forgets: dict[tuple[str, int | None, int | None], list[MemoryGovernanceRecord]] = {}
    for row in facts.governance:
        if row.action == "forget":
            # A forget without a finding id cannot be matched: it stays a retired entry of its own.
            key = (row.repo, row.finding_id, None if row.finding_id is not None else row.id)
            forgets.setdefault(key, []).append(row)
            continue
        target = by_memory_id.get(row.memory_id) if row.memory_id is not None else None
        if target is not None and _remembered(target, row):
            _apply_remember(target, row)
        else:
            entries.append(_absent_entry(row))
    for (repo, finding_id, _), rows in forgets.items():
        live = by_finding.get((repo, finding_id)) if finding_id is not None else None
        if live is not None:
            _apply_forget(live, rows)
        else:
            entries.append(_retired_entry(rows, facts))
    _apply_pending(entries, by_finding, facts)
    for entry in entries:
        entry.history.sort(key=lambda e: _time_key(e.at))
    stored = [e for e in entries if e.memory_ids and e.status in ("live", "stale")]
    others = [e for e in entries if not (e.memory_ids and e.status in ("live", "stale"))]
    stored.sort(key=lambda e: (e.repo, min(e.memory_ids)))
    others.sort(key=lambda e: (e.repo, _time_key(e.retired_at or e.added_at or e.created_at)))
    return sorted(stored + others, key=lambda e: e.repo)


def _held_events(row: PendingMemory) -> list[HistoryEvent]:
    """When the finding was held back, and the writer's decision on it if there was one."""
    events = [HistoryEvent(at=row.created_at, kind="held", actor=row.author, how=row.author_access)]
    if row.status != "pending":
        kind: HistoryKind = "confirmed" if row.status == "promoted" else "discarded"
        events.append(HistoryEvent(at=row.decided_at, kind=kind, actor=row.decided_by, how=row.decided_how))
    return events


def _held_entry(row: PendingMemory, facts: KnowledgeFacts) -> MemoryProvenance:
    """A finding that never became a memory (waiting, or discarded): only its held-back row tells of it."""
    entry = MemoryProvenance(
        status="pending" if row.status == "pending" else "discarded",
        repo=row.repo,
        finding_id=row.comment_id,
        memory_ids=[],
        outcomes=[],
        pr_number=row.pr_number,
        finding_text=row.finding_text,
        severity=row.severity,
        category=row.category,
        file_path=row.file_path,
        created_at=row.created_at,
        held_author=row.author,
    )
    if row.comment_id is not None:
        _attach_finding(entry, row.repo, int(row.comment_id), facts)
    entry.history.extend(_held_events(row))
    return entry


def _apply_pending(
    entries: list[MemoryProvenance],
    by_finding: dict[tuple[str, int], MemoryProvenance],
    facts: KnowledgeFacts,
) -> None:
    """Promoted rows tell their memory who confirmed it; the others become entries of their own."""
    for row in facts.pending:
        live = by_finding.get((row.repo, int(row.comment_id))) if row.comment_id is not None else None
        if row.status == "promoted" and live is not None:
            live.held_author = row.author
            live.confirmed_by, live.confirmed_how, live.confirmed_at = (
                row.decided_by,
                row.decided_how,
                row.decided_at,
            )
            live.history.extend(_held_events(row))
        elif row.status != "promoted":
            entries.append(_held_entry(row, facts))


def retired_by_repo(governance: Iterable[MemoryGovernanceRecord]) -> dict[str, int]:
    """Distinct findings forgotten (and not restored from the dashboard), per repo (what ``kodiai memory
    stats`` counts as retired)."""
    seen: dict[str, set[int]] = {}
    for row in governance:
        if row.action == "forget" and row.finding_id is not None and row.restored_at is None:
            seen.setdefault(row.repo, set()).add(int(row.finding_id))
    return {repo: len(ids) for repo, ids in sorted(seen.items())}
