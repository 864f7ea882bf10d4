"""Feedback and memory-governance queries of the knowledge DB (port additions on the original's tables).

Reactions are keyed by the finding's comment id, which is also the learned memory's ``finding_id``
(behaviour R1 step 50), so a retrieved memory finds its feedback without a join.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from kodiai.storage.database import Database
from kodiai.storage.feedback_tally import FeedbackTally
from kodiai.storage.knowledge_models import FindingProvenance, MemoryGovernanceRecord, ReactionRow
from kodiai.storage.rollups import rebuild_outcomes_now

_GOVERNANCE_COLUMNS = [
    "repo",
    "action",
    "actor",
    "finding_id",
    "memory_id",
    "removed",
    "pr_number",
    "comment_id",
    "comment_url",
    "text",
]
# SQLite's default limit on host parameters is 999 on old builds: chunk IN lists well below it.
_CHUNK = 500


def _chunks(values: list[int]) -> Iterable[list[int]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


def _marks(values: Collection[object]) -> str:
    return ", ".join("?" for _ in values)


def remove_withdrawn_reactions(
    db: Database, repo: str, comment_id: int, kept_reaction_ids: Collection[int]
) -> int:
    """Delete the comment's stored reactions that are no longer on GitHub (withdrawn or changed)."""
    sql = "DELETE FROM feedback_reactions WHERE repo = ? AND comment_id = ?"
    params: list[object] = [repo, int(comment_id)]
    if kept_reaction_ids:
        sql += f" AND reaction_id NOT IN ({_marks(kept_reaction_ids)})"
        params.extend(int(r) for r in kept_reaction_ids)
    with db.transaction() as tx:  # the dashboard's per-review outcomes of those reactions with them
        rows = tx.fetch_all(sql + " RETURNING review_id", tuple(params))
        rebuild_outcomes_now(tx, {int(r[0]) for r in rows})
    return len(rows)


def feedback_tallies(db: Database, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], FeedbackTally]:
    """Thumbs up/down per ``(repo, comment_id)``; keys without reactions are absent."""
    by_repo: dict[str, set[int]] = {}
    for repo, comment_id in keys:
        by_repo.setdefault(repo, set()).add(int(comment_id))
    out: dict[tuple[str, int], FeedbackTally] = {}
    for repo, ids in by_repo.items():
        for chunk in _chunks(sorted(ids)):
            rows = db.query(
                "SELECT comment_id, SUM(reaction_content = '+1') AS up, SUM(reaction_content = '-1') AS down "
                f"FROM feedback_reactions WHERE repo = ? AND comment_id IN ({_marks(chunk)}) GROUP BY comment_id",
                (repo, *chunk),
            )
            for row in rows:
                tally = FeedbackTally(thumbs_up=int(row["up"] or 0), thumbs_down=int(row["down"] or 0))
                if not tally.empty:
                    out[(repo, int(row["comment_id"]))] = tally
    return out


def reactions_for(db: Database, repo: str, comment_ids: Iterable[int]) -> dict[int, list[ReactionRow]]:
    """The kept reactions of each comment, oldest first."""
    out: dict[int, list[ReactionRow]] = {}
    for chunk in _chunks(sorted({int(c) for c in comment_ids})):
        rows = db.query(
            "SELECT comment_id, reaction_id, reaction_content, reactor_login, reacted_at FROM feedback_reactions "
            f"WHERE repo = ? AND comment_id IN ({_marks(chunk)}) ORDER BY COALESCE(reacted_at, created_at), id",
            (repo, *chunk),
        )
        for row in rows:
            out.setdefault(int(row["comment_id"]), []).append(ReactionRow(**dict(row)))
    return out


def finding_provenance(db: Database, repo: str, comment_ids: Iterable[int]) -> dict[int, FindingProvenance]:
    """The newest finding posted as each comment, with its review and PR."""
    out: dict[int, FindingProvenance] = {}
    for chunk in _chunks(sorted({int(c) for c in comment_ids})):
        rows = db.query(
            "SELECT f.comment_id, f.id AS finding_id, f.review_id, r.pr_number, f.comment_surface, f.created_at, "
            "f.title FROM findings f JOIN reviews r ON r.id = f.review_id "
            f"WHERE r.repo = ? AND f.comment_id IN ({_marks(chunk)}) ORDER BY f.id",
            (repo, *chunk),
        )
        for row in rows:
            out[int(row["comment_id"])] = FindingProvenance(**dict(row))
    return out


def record_governance(db: Database, entry: MemoryGovernanceRecord) -> MemoryGovernanceRecord:
    """Append one governance row; returns it with its id and timestamp."""
    values = entry.model_dump()
    row = db.fetch_one(
        f"INSERT INTO memory_governance ({', '.join(_GOVERNANCE_COLUMNS)}) "
        f"VALUES ({_marks(_GOVERNANCE_COLUMNS)}) RETURNING id, created_at",
        tuple(values[c] for c in _GOVERNANCE_COLUMNS),
    )
    assert row is not None  # INSERT … RETURNING of one row returns it
    return entry.model_copy(update={"id": int(row[0]), "created_at": str(row[1])})


def list_governance(db: Database, repo: str | None = None) -> list[MemoryGovernanceRecord]:
    sql = "SELECT * FROM memory_governance"
    params: tuple[object, ...] = ()
    if repo is not None:
        sql += " WHERE repo = ?"
        params = (repo,)
    return [MemoryGovernanceRecord(**dict(r)) for r in db.query(sql + " ORDER BY id", params)]


def retired_findings(db: Database, repo: str) -> set[int]:
    """Finding ids a maintainer told the bot to forget (their memories must not come back) and nobody
    restored from the dashboard since."""
    rows = db.query(
        "SELECT DISTINCT finding_id FROM memory_governance WHERE repo = ? AND action = 'forget' "
        "AND finding_id IS NOT NULL AND restored_at IS NULL",
        (repo,),
    )
    return {int(r[0]) for r in rows}
