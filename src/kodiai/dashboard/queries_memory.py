"""Memory quality: for each learned memory, how often retrieval put it in a review's prompt and what the
team said about the findings of those reviews (👍/👎 kept by feedback sync), rolled up per repository.

A memory here is a posted finding (its review-comment id is the memory's ``finding_id``) of a repository
in scope; ``retrieval_hits`` says which reviews it was shown to (``kept``) or cut from; the reactions on the
findings of those reviews (``reviews.delivery_id`` = the hit's delivery) are its outcomes after retrieval.
Precision = 👍 / (👍 + 👎) with its sample size; a memory shown only beside 👎 is flagged for review.
SQL does the counting (both dialects); :func:`assemble` is pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kodiai.dashboard.scope import Scope
from kodiai.dashboard.stats import precision
from kodiai.dashboard.tables import Table
from kodiai.storage.database import Executor

SHOWN_LIMIT = 200


@dataclass(frozen=True)
class MemoryFigures:
    repo: str
    finding_id: int
    title: str
    severity: str
    forgotten: bool
    retrieved: int
    cut: int
    up: int
    down: int

    @property
    def precision(self) -> float | None:
        return precision(self.up, self.down)

    @property
    def judged(self) -> int:
        return self.up + self.down

    @property
    def flagged(self) -> bool:
        """Shown only ever beside 👎: a memory that may be teaching the wrong lesson."""
        return self.down > 0 and self.up == 0


@dataclass
class MemoryQuality:
    memories: list[MemoryFigures] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)

    @property
    def flagged(self) -> list[MemoryFigures]:
        return [m for m in self.memories if m.flagged and not m.forgotten]

    @property
    def never_retrieved(self) -> list[MemoryFigures]:
        return [m for m in self.memories if m.retrieved == 0 and not m.forgotten]


def memory_quality(knowledge: Executor, scope: Scope) -> MemoryQuality:
    universe = _universe(knowledge, scope)
    shown = _shown(knowledge, scope)
    forgotten = _forgotten(knowledge, scope)
    return assemble(universe, shown, forgotten)


def _universe(knowledge: Executor, scope: Scope) -> list[tuple[str, int, str, str]]:
    rsql, rparams = scope.repo_sql("r.repo")
    return [
        (str(r[0]), int(r[1]), str(r[2]), str(r[3]))
        for r in knowledge.fetch_all(
            "SELECT r.repo, f.comment_id, MIN(f.title), MIN(f.severity) FROM findings f"
            " JOIN reviews r ON r.id = f.review_id"
            f" WHERE f.comment_id IS NOT NULL{rsql}"
            " AND NOT EXISTS (SELECT 1 FROM pending_memories p WHERE p.repo = r.repo"
            " AND p.comment_id = f.comment_id AND p.status <> 'promoted')"
            " GROUP BY r.repo, f.comment_id",
            tuple(rparams),
        )
    ]


def _shown(knowledge: Executor, scope: Scope) -> dict[tuple[str, int], tuple[int, int, int, int]]:
    """``(repo, finding_id) → (kept, cut, 👍, 👎)`` over the range's retrievals; both the reviewing and the
    memory's repository must be in scope (another repository's reviews are not the viewer's to count)."""
    hsql, hparams = scope.repo_sql("h.repo")
    ssql, sparams = scope.repo_sql("h.source_repo")
    rows = knowledge.fetch_all(
        "WITH shown AS (SELECT h.source_repo AS repo, h.finding_id, h.delivery_id, h.kept FROM retrieval_hits h"
        f" WHERE h.finding_id IS NOT NULL AND h.created_at >= ?{hsql}{ssql}),"
        " judged AS (SELECT r.delivery_id,"
        " SUM(CASE WHEN fr.reaction_content = '+1' THEN 1 ELSE 0 END) AS up,"
        " SUM(CASE WHEN fr.reaction_content = '-1' THEN 1 ELSE 0 END) AS down"
        " FROM reviews r JOIN feedback_reactions fr ON fr.review_id = r.id"
        " WHERE r.delivery_id IN (SELECT delivery_id FROM shown WHERE kept = 1) GROUP BY r.delivery_id)"
        " SELECT s.repo, s.finding_id, SUM(CASE WHEN s.kept = 1 THEN 1 ELSE 0 END),"
        " SUM(CASE WHEN s.kept = 1 THEN 0 ELSE 1 END),"
        " COALESCE(SUM(CASE WHEN s.kept = 1 THEN j.up END), 0), COALESCE(SUM(CASE WHEN s.kept = 1 THEN j.down END), 0)"
        " FROM shown s LEFT JOIN judged j ON j.delivery_id = s.delivery_id GROUP BY s.repo, s.finding_id",
        (scope.since, *hparams, *sparams),
    )
    return {(str(r[0]), int(r[1])): (int(r[2]), int(r[3]), int(r[4]), int(r[5])) for r in rows}


def _forgotten(knowledge: Executor, scope: Scope) -> set[tuple[str, int]]:
    rsql, rparams = scope.repo_sql()
    return {
        (str(r[0]), int(r[1]))
        for r in knowledge.fetch_all(
            "SELECT DISTINCT repo, finding_id FROM memory_governance"
            f" WHERE action = 'forget' AND finding_id IS NOT NULL{rsql}",
            tuple(rparams),
        )
    }


def assemble(
    universe: Iterable[tuple[str, int, str, str]],
    shown: dict[tuple[str, int], tuple[int, int, int, int]],
    forgotten: set[tuple[str, int]],
) -> MemoryQuality:
    """Figures per memory (most retrieved first), the per-repository rollup and the export tables."""
    memories = []
    for repo, finding_id, title, severity in universe:
        kept, cut, up, down = shown.get((repo, finding_id), (0, 0, 0, 0))
        memories.append(
            MemoryFigures(
                repo, finding_id, title, severity, (repo, finding_id) in forgotten, kept, cut, up, down
            )
        )
    memories.sort(key=lambda m: (-m.retrieved, -m.judged, m.repo, m.finding_id))
    out = MemoryQuality(memories=memories)
    columns = (
        "repository",
        "finding_id",
        "title",
        "severity",
        "forgotten",
        "retrieved",
        "cut",
        "up",
        "down",
        "precision",
        "judged",
    )

    def row(m: MemoryFigures) -> tuple[object, ...]:
        return (
            m.repo,
            m.finding_id,
            m.title,
            m.severity,
            m.forgotten,
            m.retrieved,
            m.cut,
            m.up,
            m.down,
            m.precision,
            m.judged,
        )

    out.tables = [
        _rollup(memories),
        Table("memory-per-memory", "Per memory", columns, [row(m) for m in memories]),
        Table("memory-flagged", "Shown only beside 👎", columns, [row(m) for m in out.flagged]),
        Table("memory-never-retrieved", "Never retrieved", columns, [row(m) for m in out.never_retrieved]),
    ]
    return out


def _rollup(memories: list[MemoryFigures]) -> Table:
    per: dict[str, list[int]] = {}
    for m in memories:
        agg = per.setdefault(m.repo, [0, 0, 0, 0, 0, 0])
        agg[0] += 1
        agg[1] += m.retrieved
        agg[2] += m.up
        agg[3] += m.down
        agg[4] += int(m.retrieved == 0 and not m.forgotten)
        agg[5] += int(m.flagged and not m.forgotten)
    rows = [
        (repo, a[0], a[1], a[2], a[3], precision(a[2], a[3]), a[2] + a[3], a[4], a[5])
        for repo, a in sorted(per.items())
    ]
    return Table(
        "memory-by-repo",
        "By repository",
        (
            "repository",
            "memories",
            "retrieved",
            "up",
            "down",
            "precision",
            "judged",
            "never_retrieved",
            "flagged",
        ),
        rows,
    )
