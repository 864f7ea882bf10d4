"""Memory quality: for each learned memory, how often retrieval put it in a review's prompt and what the
team said about the findings of those reviews (👍/👎 kept by feedback sync), rolled up per repository.

A memory here is a posted finding (its review-comment id is the memory's ``finding_id``); ``retrieval_hits``
says which reviews it was shown to (``kept``) or cut from; the reactions on the findings of those reviews
(``reviews.delivery_id`` = the hit's delivery) are its outcomes after retrieval, with the findings of those
reviews a later review of the same PR found fixed (``resolved_findings``). Precision = 👍 / (👍 + 👎) with its
sample size; a memory shown only beside 👎 is flagged for review.

Bounded for the page (each query reads an index range or a small set, whatever the store's size): the most
retrieved memories, those most often shown beside 👎 only, the oldest never retrieved (:data:`TOP` each). The export
(:func:`memory_export`) lists every memory. SQL counts (both dialects); :func:`figures` is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kodiai.dashboard.memory_counts import PageRow, Parts, count, unpack
from kodiai.dashboard.queries_rollups import first_full_day
from kodiai.dashboard.scope import Scope
from kodiai.dashboard.stats import precision
from kodiai.dashboard.tables import Table
from kodiai.storage.database import Executor
from kodiai.storage.rollups import (
    HITS,
    KNOWLEDGE_STATE,
    OUTCOMES,
    REACTIONS,
    RESOLVED,
    outcome_marks,
    watermark,
)
from kodiai.storage.rollups_packed import KEPT_WIDTH, MEMORY, PAIR_WIDTH, PAIRS

TOP = 200
COLUMNS = (
    "repository", "finding_id", "title", "severity", "forgotten", "retrieved", "cut", "up", "down",
    "precision", "judged", "fixed",
)  # fmt: skip

Key = tuple[str, int]
Outcomes = tuple[int, int, int]
"""``(👍, 👎, findings fixed in a later push)`` on the findings of the reviews a memory was shown to."""


@dataclass(frozen=True)
class MemoryFigures:
    repo: str
    finding_id: int
    title: str
    severity: str
    forgotten: bool
    retrieved: int
    cut: int | None
    """Reviews whose cut dropped it (None on the page: only the export counts them)."""
    up: int
    down: int
    fixed: int = 0
    """Findings of the reviews it was shown to that a later review of the same PR found fixed."""

    @property
    def precision(self) -> float | None:
        return precision(self.up, self.down)

    @property
    def judged(self) -> int:
        return self.up + self.down

    @property
    def flagged(self) -> bool:
        """Shown only ever beside 👎: a memory that may be teaching the wrong lesson."""
        return self.down > 0 and self.up == 0 and not self.forgotten

    def row(self) -> tuple[object, ...]:
        return (
            self.repo, self.finding_id, self.title, self.severity, self.forgotten, self.retrieved, self.cut,
            self.up, self.down, self.precision, self.judged, self.fixed,
        )  # fmt: skip


@dataclass
class MemoryQuality:
    top: list[MemoryFigures] = field(default_factory=list)
    """The most retrieved memories of the range (at most :data:`TOP`)."""
    flagged: list[MemoryFigures] = field(default_factory=list)
    never_retrieved: list[MemoryFigures] = field(default_factory=list)
    """The oldest memories no review of any time was shown (at most :data:`TOP`)."""
    rollup: Table = field(default_factory=lambda: Table("memory-by-repo", "By repository", ()))
    forgotten: list[tuple[Any, ...]] = field(default_factory=list)
    """The forgotten memories (newest first, at most :data:`TOP`), in :data:`FORGOTTEN_COLUMNS` order."""

    @property
    def tables(self) -> list[Table]:
        return [
            self.rollup,
            Table("memory-top", "Most retrieved", COLUMNS, [m.row() for m in self.top]),
            Table("memory-flagged", "Shown only beside 👎", COLUMNS, [m.row() for m in self.flagged]),
            Table(
                "memory-never-retrieved", "Never retrieved", COLUMNS, [m.row() for m in self.never_retrieved]
            ),
            Table("memory-forgotten", "Forgotten", FORGOTTEN_COLUMNS, self.forgotten),
        ]


def memory_quality(knowledge: Executor, scope: Scope, *, rollups: bool = True) -> MemoryQuality:
    """The page's figures. The range's kept retrievals and the outcomes beside each memory come from the
    packed per-day rollups and the rows past them (:func:`_rolled_parts`), counted per memory in memory
    (:func:`~kodiai.dashboard.memory_counts.count`); ``rollups`` False: grouped from every row in one statement
    (:func:`_page_rows`), the definition the rollup read must equal."""
    forgotten = _forgotten(knowledge, scope)
    if rollups:
        got = count(_rolled_parts(knowledge, scope), scope.repos, forgotten, TOP)
        top_rows, flagged_rows, per_repo, judged_repo = (
            got.top,
            got.flagged,
            got.kept_by_repo,
            got.judged_by_repo,
        )
    else:
        top_rows, flagged_rows, per_repo, judged_repo = _page_rows(knowledge, scope)
    top = [k for k, _n, _o in sorted(top_rows, key=lambda r: (-r[1], r[0]))]
    flagged = [k for k, _n, _o in sorted(flagged_rows, key=lambda r: (-r[2][1], r[0])) if k not in forgotten]
    flagged = flagged[:TOP]
    counts: dict[Key, tuple[int, int | None]] = {k: (n, None) for k, n, _o in [*top_rows, *flagged_rows]}
    judged: dict[Key, Outcomes] = {k: o for k, _n, o in [*top_rows, *flagged_rows]}
    titles = _titles(knowledge, [*top, *flagged])
    out = MemoryQuality()
    out.top = figures(top, counts, judged, forgotten, titles)
    out.flagged = figures(flagged, counts, judged, forgotten, titles)
    out.never_retrieved = [
        MemoryFigures(repo, fid, title, severity, False, 0, 0, 0, 0)
        for repo, fid, title, severity in _never_retrieved(knowledge, scope)
    ]
    out.rollup = rollup_table(per_repo, judged_repo)
    out.forgotten = forgotten_list(knowledge, scope)
    return out


FORGOTTEN_COLUMNS = ("repository", "finding_id", "title", "forgotten_at", "actor", "removed", "applied")


def forgotten_list(knowledge: Executor, scope: Scope) -> list[tuple[Any, ...]]:
    """Forgets not restored: who, when, how many rows left the store, and whether the store has applied it
    yet (a forget recorded on a ``web`` replica waits for a worker)."""
    rsql, rparams = scope.repo_sql()
    return [
        (str(r[0]), int(r[1]), r[2], str(r[3]), str(r[4]), int(r[5]), r[6] is not None)
        for r in knowledge.fetch_all(
            "SELECT repo, finding_id, text, created_at, actor, removed, applied_at FROM memory_governance"
            f" WHERE action = 'forget' AND finding_id IS NOT NULL AND restored_at IS NULL{rsql}"
            f" ORDER BY id DESC LIMIT {TOP}",
            tuple(rparams),
        )
    ]


def memory_export(knowledge: Executor, scope: Scope) -> Table:
    """Every memory of the viewer's repositories with its figures (the export: reads every finding)."""
    kept = _kept_counts(knowledge, scope)
    judged = _judged(knowledge, scope)
    forgotten = _forgotten(knowledge, scope)
    rsql, rparams = scope.repo_sql("r.repo")
    universe = knowledge.fetch_all(
        "SELECT r.repo, f.comment_id, MIN(f.title), MIN(f.severity) FROM findings f"
        f" JOIN reviews r ON r.id = f.review_id WHERE f.comment_id IS NOT NULL{rsql}"
        " GROUP BY r.repo, f.comment_id ORDER BY r.repo, f.comment_id",
        tuple(rparams),
    )
    titles = {(str(r[0]), int(r[1])): (str(r[2]), str(r[3])) for r in universe}
    cut = _cut_counts(knowledge, scope)
    counts: dict[Key, tuple[int, int | None]] = {k: (kept.get(k, 0), cut.get(k, 0)) for k in titles}
    rows = figures(list(titles), counts, judged, forgotten, titles)
    return Table("memory-all", "Every memory", COLUMNS, [m.row() for m in rows])


def figures(
    keys: Iterable[Key],
    counts: dict[Key, tuple[int, int | None]],
    judged: dict[Key, Outcomes],
    forgotten: set[Key],
    titles: dict[Key, tuple[str, str]],
) -> list[MemoryFigures]:
    """The figures of ``keys`` (in their order) from the counted pieces."""
    out = []
    for key in keys:
        kept, cut = counts.get(key, (0, 0))
        up, down, fixed = judged.get(key, (0, 0, 0))
        title, severity = titles.get(key, ("", ""))
        out.append(
            MemoryFigures(key[0], key[1], title, severity, key in forgotten, kept, cut, up, down, fixed)
        )
    return out


def _hit_scope(scope: Scope) -> tuple[str, list[object]]:
    """The reviewing and the memory's repository must both be in scope (another repository's reviews are not
    the viewer's to count)."""
    hsql, hparams = scope.repo_sql("h.repo")
    ssql, sparams = scope.repo_sql("h.source_repo")
    return hsql + ssql, [*hparams, *sparams]


def _kept_counts(knowledge: Executor, scope: Scope) -> dict[Key, int]:
    """``(repo, finding) → reviews of the range whose prompt held it``: one pass over the partial index of
    kept rows (``MATERIALIZED`` keeps both planners on the time range, not on a grouping index)."""
    sql, params = _hit_scope(scope)
    rows = knowledge.fetch_all(
        "WITH h AS MATERIALIZED (SELECT h.source_repo, h.finding_id FROM retrieval_hits h"
        f" WHERE h.kept = 1 AND h.created_at >= ? AND h.finding_id IS NOT NULL{sql})"
        " SELECT source_repo, finding_id, COUNT(*) FROM h GROUP BY source_repo, finding_id",
        (scope.since, *params),
    )
    return {(str(r[0]), int(r[1])): int(r[2]) for r in rows}


def _outcomes(scope: Scope) -> tuple[str, list[object]]:
    """The ``outcomes`` CTE, from every reaction and resolution: per delivery of a review created in the range
    (with the reactions' repository, or the review's for a fix), its 👍, 👎 and findings a later push fixed (a
    finding fixed once however often resolved)."""
    fsql, fparams = scope.repo_sql("fr.repo")
    rsql, rparams = scope.repo_sql("r.repo")
    return (
        "fixed AS MATERIALIZED (SELECT DISTINCT finding_id FROM resolved_findings),"
        " outcomes AS MATERIALIZED (SELECT fr.repo AS orepo, r.delivery_id,"
        f" {_UP} AS up, {_DOWN} AS down, 0 AS fixed FROM feedback_reactions fr JOIN reviews r ON r.id = fr.review_id"
        f" WHERE r.delivery_id IS NOT NULL{fsql} AND r.created_at >= ?"
        " UNION ALL SELECT r.repo, r.delivery_id, 0, 0, 1 FROM fixed x JOIN findings f ON f.id = x.finding_id"
        f" JOIN reviews r ON r.id = f.review_id WHERE r.delivery_id IS NOT NULL{rsql} AND r.created_at >= ?),",
        [*fparams, scope.since, *rparams, scope.since],
    )


_UP = "CASE WHEN fr.reaction_content = '+1' THEN 1 ELSE 0 END"
_DOWN = "CASE WHEN fr.reaction_content = '-1' THEN 1 ELSE 0 END"


def _rolled_parts(knowledge: Executor, scope: Scope) -> Parts:
    """One statement (one snapshot, so a fold committed meanwhile is seen whole or not at all): the packed
    kept memories and outcome pairs of the range's whole days (:mod:`kodiai.storage.rollups_packed`), and,
    grouped per memory, what they do not hold — the retrievals of the partial first day and those past the
    hits' watermark; the outcomes of the first day's reviews and those past the reactions' and resolutions'
    watermarks beside every retrieval of their review, and the folded outcomes beside retrievals past the
    hits' watermark. The outcome rows and their retrievals are read unfiltered (each from its own index) and
    the viewer's repositories applied after, so no planner walks a repository's every retrieval instead."""
    first_full = first_full_day(scope)
    hsql, hparams = _hit_scope(scope)
    tsql, tparams = scope.repo_sql("orepo")
    csql, cparams = scope.repo_sql("repo")
    ssql, sparams = scope.repo_sql("source_repo")
    hits_mark = _mark_sql(HITS)
    reactions_mark, resolved_mark = _mark_sql(REACTIONS), _mark_sql(RESOLVED)
    hits_hint = watermark(knowledge, KNOWLEDGE_STATE, HITS)
    reactions_hint, resolved_hint = outcome_marks(knowledge)  # never above the statement's own marks
    kept_cols = "h.repo, h.source_repo, h.finding_id"
    kept_where = f"h.kept = 1 AND h.finding_id IS NOT NULL{hsql}"
    pair_cols = "repo, source_repo, finding_id"
    sql = (
        f"WITH tailh AS MATERIALIZED (SELECT * FROM {HITS} WHERE id > ? AND id > {hits_mark}),"
        " tailo AS MATERIALIZED ("
        # the partial first day's reviews: every outcome
        f" SELECT fr.repo AS orepo, r.delivery_id, {_UP} AS up, {_DOWN} AS down, 0 AS fixed"
        " FROM reviews r JOIN feedback_reactions fr ON fr.review_id = r.id"
        " WHERE r.created_at >= ? AND r.created_at < ? AND r.delivery_id IS NOT NULL"
        " UNION ALL SELECT r.repo, r.delivery_id, 0, 0, 1 FROM reviews r JOIN findings f ON f.review_id = r.id"
        " WHERE r.created_at >= ? AND r.created_at < ? AND r.delivery_id IS NOT NULL"
        " AND EXISTS (SELECT 1 FROM resolved_findings x WHERE x.finding_id = f.id)"
        # later reviews: the reactions and first resolutions past the watermarks
        f" UNION ALL SELECT fr.repo, r.delivery_id, {_UP}, {_DOWN}, 0"
        " FROM feedback_reactions fr JOIN reviews r ON r.id = fr.review_id"
        f" WHERE fr.id > ? AND fr.id > {reactions_mark} AND r.created_at >= ? AND r.delivery_id IS NOT NULL"
        " UNION ALL SELECT r.repo, r.delivery_id, 0, 0, 1 FROM resolved_findings x"
        " JOIN findings f ON f.id = x.finding_id JOIN reviews r ON r.id = f.review_id"
        f" WHERE x.id > ? AND x.id > {resolved_mark} AND NOT EXISTS (SELECT 1 FROM resolved_findings y"
        f" WHERE y.finding_id = x.finding_id AND (y.id <= {resolved_mark} OR y.id < x.id))"
        " AND r.created_at >= ? AND r.delivery_id IS NOT NULL),"
        " tailp AS MATERIALIZED (SELECT t.orepo, h.repo, h.source_repo, h.finding_id, t.up, t.down, t.fixed"
        f" FROM tailo t JOIN {HITS} h ON h.delivery_id = t.delivery_id WHERE h.kept = 1 AND h.finding_id IS NOT NULL"
        " UNION ALL SELECT o.repo, h.repo, h.source_repo, h.finding_id, o.up, o.down, o.fixed FROM tailh h"
        f" JOIN {OUTCOMES} o ON o.delivery_id = h.delivery_id WHERE o.review_created_at >= ? AND h.kept = 1"
        " AND h.finding_id IS NOT NULL)"
        " SELECT 0 AS part, m.names, m.kept AS packed, NULL AS orepo, NULL AS repo, NULL AS source,"
        f" NULL AS finding_id, NULL AS a, NULL AS b, NULL AS c FROM {MEMORY} m WHERE m.day >= ?"
        f" UNION ALL SELECT 1, NULL, NULL, NULL, {kept_cols}, COUNT(*), 0, 0 FROM {HITS} h"
        f" WHERE h.created_at >= ? AND h.created_at < ? AND h.id <= {hits_mark} AND {kept_where} GROUP BY {kept_cols}"
        f" UNION ALL SELECT 1, NULL, NULL, NULL, {kept_cols}, COUNT(*), 0, 0 FROM tailh h"
        f" WHERE h.created_at >= ? AND {kept_where} GROUP BY {kept_cols}"
        f" UNION ALL SELECT 2, p.names, p.pairs, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM {PAIRS} p"
        " WHERE p.day >= ?"
        f" UNION ALL SELECT 3, NULL, NULL, orepo, {pair_cols}, SUM(up), SUM(down), SUM(fixed) FROM tailp"
        f" WHERE 1 = 1{tsql}{csql}{ssql} GROUP BY orepo, {pair_cols}"
    )
    params = (
        hits_hint,
        scope.since, first_full, scope.since, first_full,
        reactions_hint, first_full, resolved_hint, first_full,
        first_full,
        first_full,
        scope.since, first_full, *hparams,
        scope.since, *hparams,
        first_full,
        *tparams, *cparams, *sparams,
    )  # fmt: skip
    parts = Parts()
    for part, names, packed, orepo, repo, source, fid, a, b, c in knowledge.fetch_all(sql, params):
        if part == 0:
            parts.kept.append(unpack(names, packed, KEPT_WIDTH))
        elif part == 1:
            parts.kept_rows.append((str(repo), str(source), int(fid), int(a)))
        elif part == 2:
            parts.pairs.append(unpack(names, packed, PAIR_WIDTH))
        else:
            parts.pair_rows.append((str(repo), str(orepo), str(source), int(fid), int(a), int(b), int(c)))
    return parts


def _mark_sql(source: str) -> str:
    return f"(SELECT COALESCE(MAX(watermark), 0) FROM {KNOWLEDGE_STATE} WHERE source = '{source}')"


def _judged_ctes(scope: Scope) -> tuple[str, list[object]]:
    """``m``: per memory of the viewer's, the outcomes of the reviews it was shown to (after ``outcomes``),
    read from the (few) reviews with outcomes outward through the kept hits' delivery index (the scope is
    applied after that join, so no planner trades the delivery index for a repository one)."""
    sql, params = scope.repo_sql("repo")
    ssql, sparams = scope.repo_sql("source_repo")
    return (
        " judged AS MATERIALIZED (SELECT orepo, delivery_id, SUM(up) AS up, SUM(down) AS down,"
        " SUM(fixed) AS fixed FROM outcomes GROUP BY orepo, delivery_id),"
        " shown AS MATERIALIZED (SELECT h.repo, h.source_repo, h.finding_id, j.up, j.down, j.fixed FROM judged j"
        " JOIN retrieval_hits h ON h.delivery_id = j.delivery_id WHERE h.kept = 1 AND h.finding_id IS NOT NULL),"
        " m AS MATERIALIZED (SELECT source_repo, finding_id, SUM(up) AS up, SUM(down) AS down, SUM(fixed) AS fixed"
        f" FROM shown WHERE 1 = 1{sql}{ssql} GROUP BY finding_id, source_repo)",
        [*params, *sparams],
    )


def _judged(knowledge: Executor, scope: Scope) -> dict[Key, Outcomes]:
    """``(repo, finding) → (👍, 👎, fixed)`` of every memory shown beside an outcome in the range (the
    export, which reads every finding anyway: from every row)."""
    outcomes, oparams = _outcomes(scope)
    judged, jparams = _judged_ctes(scope)
    rows = knowledge.fetch_all(
        f"WITH {outcomes}{judged} SELECT source_repo, finding_id, up, down, fixed FROM m",
        (*oparams, *jparams),
    )
    return {(str(r[0]), int(r[1])): (int(r[2]), int(r[3]), int(r[4])) for r in rows}


def _page_rows(
    knowledge: Executor, scope: Scope
) -> tuple[list[PageRow], list[PageRow], dict[str, tuple[int, int]], dict[str, tuple[int, int, int, int]]]:
    """One statement: the range's kept retrievals grouped per memory (``g``) and the outcomes grouped per
    memory (``m``), each once; back come the :data:`TOP` most retrieved with their outcomes, the :data:`TOP`
    not forgotten that were only ever shown beside 👎 (most 👎 first) with their retrieval counts, per
    repository ``(retrieved, distinct memories)`` from ``g`` and ``(👍, 👎, shown only beside 👎, fixed)``
    from ``m`` — a few hundred rows, whatever the range."""
    hsql, hparams = _hit_scope(scope)
    outcomes, oparams = _outcomes(scope)
    judged, jparams = _judged_ctes(scope)
    gsql, gparams = scope.repo_sql("mg.repo")
    on = "{a}.source_repo = {b}.source_repo AND {a}.finding_id = {b}.finding_id"
    rows = knowledge.fetch_all(
        "WITH h AS MATERIALIZED (SELECT h.source_repo, h.finding_id FROM retrieval_hits h"
        f" WHERE h.kept = 1 AND h.created_at >= ? AND h.finding_id IS NOT NULL{hsql}),"
        " g AS MATERIALIZED (SELECT source_repo, finding_id, COUNT(*) AS n FROM h GROUP BY finding_id, source_repo),"
        f" {outcomes}{judged},"
        " t AS MATERIALIZED (SELECT source_repo, finding_id, n FROM g"
        f" ORDER BY n DESC, source_repo, finding_id LIMIT {TOP}),"
        " f AS MATERIALIZED (SELECT source_repo, finding_id, up, down, fixed FROM m WHERE down > 0 AND up = 0"
        " AND NOT EXISTS (SELECT 1 FROM memory_governance mg WHERE mg.repo = m.source_repo"
        " AND mg.finding_id = m.finding_id AND mg.action = 'forget' AND mg.restored_at IS NULL"
        f"{gsql}) ORDER BY down DESC, source_repo, finding_id LIMIT {TOP})"
        " SELECT 0, t.source_repo, t.finding_id, t.n, COALESCE(m.up, 0), COALESCE(m.down, 0), COALESCE(m.fixed, 0)"
        f" FROM t LEFT JOIN m ON {on.format(a='m', b='t')}"
        " UNION ALL SELECT 1, f.source_repo, f.finding_id, (SELECT COUNT(*) FROM retrieval_hits h"
        " WHERE h.source_repo = f.source_repo AND h.finding_id = f.finding_id AND h.kept = 1"
        f" AND h.created_at >= ?{hsql}), f.up, f.down, f.fixed FROM f"
        " UNION ALL SELECT 2, source_repo, COUNT(*), SUM(n), 0, 0, 0 FROM g GROUP BY source_repo"
        " UNION ALL SELECT 3, source_repo, SUM(CASE WHEN down > 0 AND up = 0 THEN 1 ELSE 0 END), 0, SUM(up),"
        " SUM(down), SUM(fixed) FROM m GROUP BY source_repo",
        (scope.since, *hparams, *oparams, *jparams, *gparams, scope.since, *hparams),
    )
    top: list[PageRow] = []
    flagged: list[PageRow] = []
    kept: dict[str, tuple[int, int]] = {}
    outcomes_by_repo: dict[str, tuple[int, int, int, int]] = {}
    for part, repo, a, b, up, down, fixed in rows:
        part = int(part)
        if part in (0, 1):
            row = ((str(repo), int(a)), int(b), (int(up), int(down), int(fixed)))
            (top if part == 0 else flagged).append(row)
        elif part == 2:
            kept[str(repo)] = (int(b), int(a))
        else:
            outcomes_by_repo[str(repo)] = (int(up), int(down), int(a), int(fixed))
    return top, flagged, kept, outcomes_by_repo


def _cut_counts(knowledge: Executor, scope: Scope) -> dict[Key, int]:
    """How often the cut dropped each memory in the range (the export only: it reads every dropped row)."""
    sql, params = _hit_scope(scope)
    rows = knowledge.fetch_all(
        "SELECT h.source_repo, h.finding_id, COUNT(*) FROM retrieval_hits h"
        f" WHERE h.kept = 0 AND h.created_at >= ? AND h.finding_id IS NOT NULL{sql}"
        " GROUP BY h.source_repo, h.finding_id",
        (scope.since, *params),
    )
    return {(str(r[0]), int(r[1])): int(r[2]) for r in rows}


def _forgotten(knowledge: Executor, scope: Scope) -> set[Key]:
    rsql, rparams = scope.repo_sql()
    return {
        (str(r[0]), int(r[1]))
        for r in knowledge.fetch_all(
            "SELECT DISTINCT repo, finding_id FROM memory_governance"
            f" WHERE action = 'forget' AND finding_id IS NOT NULL AND restored_at IS NULL{rsql}",
            tuple(rparams),
        )
    }


def _titles(knowledge: Executor, keys: Sequence[Key]) -> dict[Key, tuple[str, str]]:
    ids = sorted({fid for _, fid in keys})
    out: dict[Key, tuple[str, str]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        for repo, fid, title, severity in knowledge.fetch_all(
            "SELECT r.repo, f.comment_id, MIN(f.title), MIN(f.severity) FROM findings f"
            f" JOIN reviews r ON r.id = f.review_id WHERE f.comment_id IN ({', '.join('?' for _ in chunk)})"
            " GROUP BY r.repo, f.comment_id",
            tuple(chunk),
        ):
            out[(str(repo), int(fid))] = (str(title), str(severity))
    return out


def _never_retrieved(knowledge: Executor, scope: Scope) -> list[tuple[str, int, str, str]]:
    """Posted findings no retrieval ever kept, not forgotten, not held back (issue 23's pending): the first
    :data:`TOP` the planner meets (no ORDER BY: sorting would read every finding of the repositories)."""
    rsql, rparams = scope.repo_sql("r.repo")
    rows = [
        (str(r[0]), int(r[1]), str(r[2]), str(r[3]))
        for r in knowledge.fetch_all(
            "SELECT r.repo, f.comment_id, f.title, f.severity FROM findings f JOIN reviews r ON r.id = f.review_id"
            f" WHERE f.comment_id IS NOT NULL{rsql}"
            " AND NOT EXISTS (SELECT 1 FROM retrieval_hits h WHERE h.source_repo = r.repo"
            " AND h.finding_id = f.comment_id AND h.kept = 1)"
            " AND NOT EXISTS (SELECT 1 FROM memory_governance g WHERE g.repo = r.repo AND g.action = 'forget'"
            " AND g.finding_id = f.comment_id AND g.restored_at IS NULL)"
            " AND NOT EXISTS (SELECT 1 FROM pending_memories p WHERE p.repo = r.repo"
            " AND p.comment_id = f.comment_id AND p.status <> 'promoted')"
            f" LIMIT {TOP}",
            tuple(rparams),
        )
    ]
    return sorted(rows, key=lambda r: (r[0], r[1]))


def rollup_table(kept: dict[str, tuple[int, int]], judged: dict[str, tuple[int, int, int, int]]) -> Table:
    """Per repository: reviews that held one of its memories, distinct memories held, 👍/👎 after, precision,
    memories shown only beside 👎, findings fixed in a later push (``kept``: repository → (retrieved, distinct
    memories retrieved); ``judged``: repository → (👍, 👎, memories only beside 👎, fixed))."""
    rows = []
    for repo in sorted({*kept, *judged}):
        n, distinct = kept.get(repo, (0, 0))
        up, down, only_down, fixed = judged.get(repo, (0, 0, 0, 0))
        rows.append((repo, n, distinct, up, down, precision(up, down), up + down, only_down, fixed))
    return Table(
        "memory-by-repo",
        "By repository",
        (
            "repository", "retrieved", "memories_retrieved", "up", "down", "precision", "judged", "only_down",
            "fixed",
        ),
        rows,
    )  # fmt: skip
