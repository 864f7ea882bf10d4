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

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any

from kodiai.dashboard.queries_overview import DayCache, whole_days
from kodiai.dashboard.scope import Scope
from kodiai.dashboard.stats import precision
from kodiai.dashboard.tables import Table
from kodiai.storage.database import Executor

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


def memory_quality(
    knowledge: Executor, scope: Scope, cache: DayCache | None = None, today: date | None = None
) -> MemoryQuality:
    """The page's figures. With ``cache``, the range's whole past days are read once for every repository
    and kept (:class:`~kodiai.dashboard.queries_overview.DayCache`); only the first, partial day and today are
    read per request, and the counts are the same."""
    first_full, days = whole_days(scope, today or datetime.now(UTC).date())
    if cache is None or not days:
        kept, per_repo = _kept_summary(knowledge, scope)
        judged = _judged(knowledge, scope)
    else:
        kept, judged = _counted_by_day(knowledge, scope, cache, first_full, days)
        per_repo = {}
        for (repo, _fid), n in kept.items():
            total, distinct = per_repo.get(repo, (0, 0))
            per_repo[repo] = (total + n, distinct + 1)
    forgotten = _forgotten(knowledge, scope)
    top = heapq.nsmallest(TOP, kept, key=lambda k: (-kept[k], k))  # = sorted(…)[:TOP], without the sort
    only_down = [k for k, (up, down, _) in judged.items() if down > 0 and up == 0 and k not in forgotten]
    flagged = heapq.nsmallest(TOP, only_down, key=lambda k: (-judged[k][1], k))
    kept |= _kept_of(knowledge, scope, [k for k in flagged if k not in kept])
    counts: dict[Key, tuple[int, int | None]] = {k: (kept.get(k, 0), None) for k in {*top, *flagged}}
    titles = _titles(knowledge, [*top, *flagged])
    out = MemoryQuality()
    out.top = figures(top, counts, judged, forgotten, titles)
    out.flagged = figures(flagged, counts, judged, forgotten, titles)
    out.never_retrieved = [
        MemoryFigures(repo, fid, title, severity, False, 0, 0, 0, 0)
        for repo, fid, title, severity in _never_retrieved(knowledge, scope)
    ]
    out.rollup = rollup(per_repo, judged)
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


KeptRow = tuple[str, str, int, int]
"""``(reviewing repo, memory's repo, finding, reviews that kept it)``."""
JudgedRow = tuple[str, str, str, int, int, int, int]
"""``(reactions' repo, reviewing repo, memory's repo, finding, 👍, 👎, fixed)``; a fixed finding's "reactions'
repo" is its review's repository."""


def _outcomes_sql(scope_sql: str, repo_sql: str, end: str) -> str:
    """Per delivery (with its reactions' repository): 👍, 👎 and findings a later push fixed, of the reviews
    created in the range. Reactions and resolutions are read from their own (small) tables outward, the
    review's id index joining them to its delivery. Parameters: the reactions' scope, ``since`` (and the end),
    the reviews' scope, ``since`` (and the end)."""
    return (
        "fixed AS MATERIALIZED (SELECT DISTINCT finding_id FROM resolved_findings),"
        " outcomes AS MATERIALIZED (SELECT fr.repo AS orepo, r.delivery_id,"
        " CASE WHEN fr.reaction_content = '+1' THEN 1 ELSE 0 END AS up,"
        " CASE WHEN fr.reaction_content = '-1' THEN 1 ELSE 0 END AS down, 0 AS fixed"
        f" FROM feedback_reactions fr JOIN reviews r ON r.id = fr.review_id WHERE r.delivery_id IS NOT NULL{scope_sql}"
        f" AND r.created_at >= ?{end}"
        " UNION ALL SELECT r.repo, r.delivery_id, 0, 0, 1 FROM fixed x JOIN findings f ON f.id = x.finding_id"
        f" JOIN reviews r ON r.id = f.review_id WHERE r.delivery_id IS NOT NULL{repo_sql} AND r.created_at >= ?{end}),"
        " judged AS MATERIALIZED (SELECT orepo, delivery_id, SUM(up) AS up, SUM(down) AS down, SUM(fixed) AS fixed"
        " FROM outcomes GROUP BY orepo, delivery_id)"
    )


def _kept_rows(knowledge: Executor, scope: Scope | None, since: str, until: str | None) -> list[KeptRow]:
    """Kept retrievals with ``since <= created_at < until`` by reviewing repo and memory (``scope`` None:
    every repository)."""
    sql, params = _hit_scope(scope) if scope is not None else ("", [])
    end, end_params = (" AND h.created_at < ?", [until]) if until is not None else ("", [])
    rows = knowledge.fetch_all(
        "WITH h AS MATERIALIZED (SELECT h.repo, h.source_repo, h.finding_id FROM retrieval_hits h"
        f" WHERE h.kept = 1 AND h.created_at >= ?{end} AND h.finding_id IS NOT NULL{sql})"
        " SELECT repo, source_repo, finding_id, COUNT(*) FROM h GROUP BY repo, source_repo, finding_id",
        (since, *end_params, *params),
    )
    return [(str(r[0]), str(r[1]), int(r[2]), int(r[3])) for r in rows]


def _judged_rows(knowledge: Executor, scope: Scope | None, since: str, until: str | None) -> list[JudgedRow]:
    """:func:`_judged`'s reading for the reviews with ``since <= created_at < until``, by the three
    repositories its scope filters on (``scope`` None: every repository)."""
    if scope is not None:
        sql, params = scope.repo_sql("h.repo")
        ssql, sparams = scope.repo_sql("h.source_repo")
        fsql, fparams = scope.repo_sql("fr.repo")
        rsql, rparams = scope.repo_sql("r.repo")
    else:
        sql, params, ssql, sparams, fsql, fparams, rsql, rparams = "", [], "", [], "", [], "", []
    end, end_params = (" AND r.created_at < ?", [until]) if until is not None else ("", [])
    rows = knowledge.fetch_all(
        f"WITH {_outcomes_sql(fsql, rsql, end)},"
        " shown AS MATERIALIZED (SELECT j.orepo AS fr_repo, h.repo, h.source_repo, h.finding_id, j.up, j.down,"
        " j.fixed FROM judged j JOIN retrieval_hits h ON h.delivery_id = j.delivery_id"
        " WHERE h.kept = 1 AND h.finding_id IS NOT NULL)"
        " SELECT fr_repo, repo, source_repo, finding_id, SUM(up), SUM(down), SUM(fixed) FROM shown h"
        f" WHERE 1 = 1{sql}{ssql} GROUP BY fr_repo, repo, source_repo, finding_id",
        (*fparams, since, *end_params, *rparams, since, *end_params, *params, *sparams),
    )
    return [(str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4]), int(r[5]), int(r[6])) for r in rows]


@dataclass(frozen=True)
class _Span:
    """The whole past days of a range, merged: every repository's kept counts and reactions per memory."""

    kept: dict[tuple[str, str, int], int]
    """``(reviewing repo, memory's repo, finding) → reviews that kept it``."""
    judged: dict[tuple[str, str, str, int], Outcomes]
    """``(reactions' repo, reviewing repo, memory's repo, finding) → (👍, 👎, fixed)``."""
    kept_all: dict[Key, int]
    judged_all: dict[Key, Outcomes]
    """The same summed over the repositories (the operator's)."""


def _span(knowledge: Executor, cache: DayCache, days: list[date]) -> _Span:
    kept: dict[tuple[str, str, int], int] = {}
    judged: dict[tuple[str, str, str, int], Outcomes] = {}
    for day in days:
        start, end = day.isoformat(), (day + timedelta(days=1)).isoformat()
        for repo, source, fid, n in cache.get(
            f"memory-kept:{start}", partial(_kept_rows, knowledge, None, start, end)
        ):
            kept[(repo, source, fid)] = kept.get((repo, source, fid), 0) + n
        for fr, repo, source, fid, up, down, fixed in cache.get(
            f"memory-judged:{start}", partial(_judged_rows, knowledge, None, start, end)
        ):
            judged[(fr, repo, source, fid)] = _add(judged.get((fr, repo, source, fid)), (up, down, fixed))
    kept_all: dict[Key, int] = {}
    for (_repo, source, fid), n in kept.items():
        kept_all[(source, fid)] = kept_all.get((source, fid), 0) + n
    judged_all: dict[Key, Outcomes] = {}
    for (_fr, _repo, source, fid), outcomes in judged.items():
        judged_all[(source, fid)] = _add(judged_all.get((source, fid)), outcomes)
    return _Span(kept, judged, kept_all, judged_all)


def _add(a: Outcomes | None, b: Outcomes) -> Outcomes:
    return b if a is None else (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _counted_by_day(
    knowledge: Executor, scope: Scope, cache: DayCache, first_full: date, days: list[date]
) -> tuple[dict[Key, int], dict[Key, Outcomes]]:
    """Kept counts and 👍/👎/fixed per memory: the partial first day and today read for this viewer, the whole
    days between merged once (every repository's rows, kept while its days are; filtered here as the SQL
    would)."""
    today = days[-1] + timedelta(days=1)
    span = cache.get(f"memory-span:{days[0]}:{today}", partial(_span, knowledge, cache, days))
    if scope.repos is None:
        kept, judged = dict(span.kept_all), dict(span.judged_all)
    else:
        wanted = set(scope.repos)
        kept, judged = {}, {}
        for (repo, source, fid), n in span.kept.items():
            if repo in wanted and source in wanted:
                kept[(source, fid)] = kept.get((source, fid), 0) + n
        for (fr, repo, source, fid), outcomes in span.judged.items():
            if fr in wanted and repo in wanted and source in wanted:
                judged[(source, fid)] = _add(judged.get((source, fid)), outcomes)
    for _repo, source, fid, n in _kept_rows(
        knowledge, scope, scope.since, first_full.isoformat()
    ) + _kept_rows(knowledge, scope, today.isoformat(), None):
        kept[(source, fid)] = kept.get((source, fid), 0) + n
    for _fr, _repo, source, fid, up, down, fixed in _judged_rows(
        knowledge, scope, scope.since, first_full.isoformat()
    ) + _judged_rows(knowledge, scope, today.isoformat(), None):
        judged[(source, fid)] = _add(judged.get((source, fid)), (up, down, fixed))
    return kept, judged


def _kept_summary(knowledge: Executor, scope: Scope) -> tuple[dict[Key, int], dict[str, tuple[int, int]]]:
    """The range's :data:`TOP` most retrieved memories with their counts, and per repository ``(retrieved,
    distinct memories)``: one grouping of the kept rows, summed in the database (a few hundred rows come
    back instead of one per memory retrieved in the range)."""
    sql, params = _hit_scope(scope)
    rows = knowledge.fetch_all(
        "WITH h AS MATERIALIZED (SELECT h.source_repo, h.finding_id FROM retrieval_hits h"
        f" WHERE h.kept = 1 AND h.created_at >= ? AND h.finding_id IS NOT NULL{sql}),"
        " g AS MATERIALIZED (SELECT source_repo, finding_id, COUNT(*) AS n FROM h GROUP BY source_repo, finding_id)"
        " SELECT part, source_repo, a, b FROM (SELECT 0 AS part, source_repo, finding_id AS a, n AS b FROM g"
        f" ORDER BY n DESC, source_repo, finding_id LIMIT {TOP}) t"
        " UNION ALL SELECT 1, source_repo, COUNT(*), CAST(SUM(n) AS BIGINT) FROM g GROUP BY source_repo",
        (scope.since, *params),
    )
    top: dict[Key, int] = {}
    per_repo: dict[str, tuple[int, int]] = {}
    for part, repo, a, b in rows:
        if int(part) == 0:
            top[(str(repo), int(a))] = int(b)
        else:
            per_repo[str(repo)] = (int(b), int(a))
    return top, per_repo


def _kept_of(knowledge: Executor, scope: Scope, keys: Sequence[Key]) -> dict[Key, int]:
    """The range's kept counts of a few memories (the flagged ones outside the top), one repository at a
    time so the lookup reads the ``(source_repo, finding_id)`` index."""
    sql, params = _hit_scope(scope)
    by_repo: dict[str, list[int]] = {}
    for repo, fid in keys:
        by_repo.setdefault(repo, []).append(fid)
    out: dict[Key, int] = {}
    for repo, fids in sorted(by_repo.items()):
        for start in range(0, len(fids), 500):
            chunk = sorted(fids)[start : start + 500]
            for fid, n in knowledge.fetch_all(
                "SELECT h.finding_id, COUNT(*) FROM retrieval_hits h WHERE h.source_repo = ?"
                f" AND h.finding_id IN ({', '.join('?' for _ in chunk)}) AND h.kept = 1 AND h.created_at >= ?{sql}"
                " GROUP BY h.finding_id",
                (repo, *chunk, scope.since, *params),
            ):
                out[(repo, int(fid))] = int(n)
    return out


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


def _judged(knowledge: Executor, scope: Scope) -> dict[Key, Outcomes]:
    """``(repo, finding) → (👍, 👎, fixed)``: the reactions on the findings of the range's reviews a memory was
    kept for, and those findings a later review of the PR found fixed, read from the (few) reviews with
    either outward through the hits' delivery index (the scope is applied after that join, so no planner
    trades the delivery index for a repository one)."""
    sql, params = scope.repo_sql("repo")
    ssql, sparams = scope.repo_sql("source_repo")
    fsql, fparams = scope.repo_sql("fr.repo")
    rsql, rparams = scope.repo_sql("r.repo")
    rows = knowledge.fetch_all(
        f"WITH {_outcomes_sql(fsql, rsql, '')},"
        " shown AS MATERIALIZED (SELECT h.repo, h.source_repo, h.finding_id, j.up, j.down, j.fixed FROM judged j"
        " JOIN retrieval_hits h ON h.delivery_id = j.delivery_id WHERE h.kept = 1 AND h.finding_id IS NOT NULL)"
        f" SELECT source_repo, finding_id, SUM(up), SUM(down), SUM(fixed) FROM shown WHERE 1 = 1{sql}{ssql}"
        " GROUP BY source_repo, finding_id",
        (*fparams, scope.since, *rparams, scope.since, *params, *sparams),
    )
    return {(str(r[0]), int(r[1])): (int(r[2]), int(r[3]), int(r[4])) for r in rows}


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


def rollup(kept: dict[str, tuple[int, int]], judged: dict[Key, Outcomes]) -> Table:
    """Per repository: reviews that held one of its memories, distinct memories held, 👍/👎 after, precision,
    findings fixed in a later push (``kept``: repository → (retrieved, distinct memories retrieved))."""
    per: dict[str, list[int]] = {}
    for repo, (n, distinct) in kept.items():
        agg = per.setdefault(repo, [0, 0, 0, 0, 0, 0])
        agg[0] += n
        agg[1] += distinct
    for (repo, _fid), (up, down, fixed) in judged.items():
        agg = per.setdefault(repo, [0, 0, 0, 0, 0, 0])
        agg[2] += up
        agg[3] += down
        agg[4] += int(down > 0 and up == 0)
        agg[5] += fixed
    rows = [
        (repo, a[0], a[1], a[2], a[3], precision(a[2], a[3]), a[2] + a[3], a[4], a[5])
        for repo, a in sorted(per.items())
    ]
    return Table(
        "memory-by-repo",
        "By repository",
        (
            "repository", "retrieved", "memories_retrieved", "up", "down", "precision", "judged", "only_down",
            "fixed",
        ),
        rows,
    )  # fmt: skip
