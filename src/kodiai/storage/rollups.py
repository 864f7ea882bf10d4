"""The dashboard's rollups (issue 28): the rows its pages count, summed per day (or per review) by the app, so
a page reads a few small rows per day of its range instead of every row, on its first request as on any.

Each rollup follows one source table and holds that table's rows up to a *watermark* (an ``id``; the
``*_rollup_state`` tables). A page adds the rows past the watermark (the live tail: today's rows, a reaction
synced late, rows imported with an old date) and reads the range's first, partial day from the source — so
its figures are those of every row of the range, whenever and whatever was folded
(:mod:`kodiai.dashboard.queries_rollups`).

Folding ("sealing"): the first write of each UTC day through a store (:class:`Sealer`) folds the source rows
past the watermark up to the first row created that day, by summing again each day (each review) those rows
belong to from all of its rows up to the new watermark: a rollup row is always the plain sum of its rows. A
write that deletes rows below the watermark (retention, a reaction withdrawn on GitHub) sums their days (their
reviews) again in the same transaction.

Why the watermark is a safe line: on SQLite writes are serialised; on PostgreSQL the fold locks its source
tables against writes (``SHARE ROW EXCLUSIVE``), so no row below the new watermark can still be uncommitted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from kodiai.storage.database import Database, Executor
from kodiai.storage.rollups_packed import (
    RUN_VALUES,
    rebuild_memory_days,
    rebuild_pair_days,
    rebuild_run_value_days,
    review_days,
)

CHUNK = 20_000
"""Source ids folded per transaction (a first fold over an existing history holds its locks in steps)."""
_IN = 500


@dataclass(frozen=True)
class DailyRollup:
    """A per-day rollup: ``table``'s rows are ``(day, *keys, *values)``, ``day`` the UTC day of ``at``; the
    source rows are ``s`` (``joins`` may add their review ``r``); ``repo`` is the column a viewer filters on."""

    source: str
    table: str
    state: str
    at: str
    repo: str
    keys: tuple[tuple[str, str], ...]
    values: tuple[tuple[str, str], ...]
    joins: str = ""
    real: tuple[str, ...] = ()
    """The value columns that are floating-point sums (the rest count)."""
    packed: tuple[str, Callable[[Executor, list[str], int], None]] | None = None
    """A packed per-day table kept with this one (:mod:`kodiai.storage.rollups_packed`) and its rebuild."""

    @property
    def columns(self) -> tuple[str, ...]:
        return ("day", *(k for k, _ in self.keys), *(v for v, _ in self.values))

    def aggregate(self, where: str, rows: str | None = None) -> str:
        """The source rows matching ``where`` summed in the rollup's shape (one SQL text, both dialects);
        ``rows``: read them from this CTE of the source's rows instead of the table."""
        day = f"substr({self.at}, 1, 10)"
        keys = ", ".join(e for _, e in self.keys)
        named = ", ".join(f"{e} AS {n}" for n, e in (*self.keys, *self.values))
        return (
            f"SELECT {day} AS day, {named} FROM {rows or self.source} s{self.joins} WHERE {where}"
            f" GROUP BY {day}, {keys}"
        )

    @property
    def watermark_sql(self) -> str:
        """The watermark as a scalar subquery (read in the statement's own snapshot)."""
        return f"(SELECT COALESCE(MAX(watermark), 0) FROM {self.state} WHERE source = '{self.source}')"


TELEMETRY_STATE = "telemetry_rollup_state"
KNOWLEDGE_STATE = "knowledge_rollup_state"

RETRIEVALS = DailyRollup(
    source="retrieval_quality",
    table="dashboard_retrieval_daily",
    state=TELEMETRY_STATE,
    at="s.created_at",
    repo="s.repo",
    keys=(("repo", "s.repo"), ("threshold_method", "COALESCE(s.threshold_method, 'unknown')")),
    values=(
        ("retrievals", "COUNT(*)"),
        ("candidates", "COALESCE(SUM(s.candidate_count), 0)"),
        ("kept", "COALESCE(SUM(s.result_count), 0)"),
        ("empty_results", "SUM(CASE WHEN s.result_count = 0 THEN 1 ELSE 0 END)"),
        ("confidence_high", "COALESCE(SUM(s.confidence_high), 0)"),
        ("confidence_medium", "COALESCE(SUM(s.confidence_medium), 0)"),
        ("confidence_low", "COALESCE(SUM(s.confidence_low), 0)"),
        ("threshold_sum", "COALESCE(SUM(s.distance_threshold), 0)"),
        ("thresholds", "COUNT(s.distance_threshold)"),
    ),
    real=("threshold_sum",),
)
RUNS = DailyRollup(
    source="executions",
    table="dashboard_runs_daily",
    state=TELEMETRY_STATE,
    at="s.created_at",
    repo="s.repo",
    keys=(("repo", "s.repo"), ("conclusion", "s.conclusion")),
    values=(("runs", "COUNT(*)"), ("cost_usd", "COALESCE(SUM(s.cost_usd), 0)")),
    real=("cost_usd",),
    packed=(RUN_VALUES, rebuild_run_value_days),
)
REVIEWS = DailyRollup(
    source="reviews",
    table="dashboard_reviews_daily",
    state=KNOWLEDGE_STATE,
    at="s.created_at",
    repo="s.repo",
    keys=(("repo", "s.repo"),),
    values=(
        ("reviews", "COUNT(*)"),
        ("findings", "COALESCE(SUM(s.findings_total), 0)"),
        ("clean", "SUM(CASE WHEN s.findings_total = 0 AND s.conclusion = 'success' THEN 1 ELSE 0 END)"),
    ),
)
FINDINGS = DailyRollup(
    source="findings",
    table="dashboard_findings_daily",
    state=KNOWLEDGE_STATE,
    at="r.created_at",
    repo="r.repo",
    keys=(("repo", "r.repo"), ("severity", "s.severity")),
    values=(("findings", "COUNT(*)"),),
    joins=" JOIN reviews r ON r.id = s.review_id",
)

REACTIONS = "feedback_reactions"
RESOLVED = "resolved_findings"
HITS = "retrieval_hits"
OUTCOMES = "dashboard_review_outcomes"
TELEMETRY_SOURCES = ("retrieval_quality", "executions")
KNOWLEDGE_SOURCES = ("reviews", "findings", HITS, REACTIONS, RESOLVED)


def utc_today() -> date:
    return datetime.now(UTC).date()


def watermark(db: Executor, state: str, source: str) -> int:
    row = db.fetch_one(f"SELECT watermark FROM {state} WHERE source = ?", (source,))
    return int(row[0]) if row else 0


def _set_watermark(tx: Executor, state: str, source: str, value: int) -> None:
    tx.execute(
        f"INSERT INTO {state} (source, watermark, folded_at) VALUES (?, ?, datetime('now'))"
        " ON CONFLICT (source) DO UPDATE SET watermark = excluded.watermark, folded_at = excluded.folded_at",
        (source, value),
    )


def _fold_end(tx: Executor, source: str, mark: int, today: date) -> int:
    """The new watermark: the last id before the first row created ``today``, at most :data:`CHUNK` ids on.
    (A row dated later than today — a clock ahead, an odd import — is folded like any other: only today's
    rows wait, so nothing can hold the fold back past tomorrow.)"""
    first_today = tx.fetch_one(
        f"SELECT MIN(id) FROM {source} WHERE id > ? AND created_at >= ? AND created_at < ?",
        (mark, today.isoformat(), (today + timedelta(days=1)).isoformat()),
    )
    if first_today is not None and first_today[0] is not None:
        end = int(first_today[0]) - 1
    else:
        top = tx.fetch_one(f"SELECT MAX(id) FROM {source}")
        end = int(top[0]) if top is not None and top[0] is not None else mark
    return max(mark, min(end, mark + CHUNK))


def _day_bounds(day: str) -> tuple[str, str] | None:
    try:
        return day, (date.fromisoformat(day) + timedelta(days=1)).isoformat()
    except ValueError:
        return None


def rebuild_days(tx: Executor, spec: DailyRollup, days: Iterable[str], mark: int) -> None:
    """Sum each of ``days`` again from its source rows up to ``mark`` (the day's rollup rows replaced)."""
    columns = ", ".join(spec.columns)
    days = sorted(set(days))
    for day in days:
        tx.execute(f"DELETE FROM {spec.table} WHERE day = ?", (day,))
        bounds = _day_bounds(day)
        params: tuple[object, ...]
        if bounds is None:  # a malformed timestamp: the same day, found the slow way
            where, params = f"s.id <= ? AND substr({spec.at}, 1, 10) = ?", (mark, day)
        else:
            where, params = f"s.id <= ? AND {spec.at} >= ? AND {spec.at} < ?", (mark, *bounds)
        tx.execute(f"INSERT INTO {spec.table} ({columns}) {spec.aggregate(where)}", params)
    if spec.packed is not None:
        spec.packed[1](tx, days, mark)


def rebuild_days_until(tx: Executor, spec: DailyRollup, last_day: str) -> None:
    """After deleting old source rows: the rollup's days up to ``last_day`` summed again (retention)."""
    mark = watermark(tx, spec.state, spec.source)
    tx.execute(f"DELETE FROM {spec.table} WHERE day < ?", (last_day,))
    if spec.packed is not None:
        tx.execute(f"DELETE FROM {spec.packed[0]} WHERE day < ?", (last_day,))
    rebuild_days(tx, spec, [last_day], mark)


def _fold_daily(tx: Executor, spec: DailyRollup, today: date) -> bool:
    """Fold one chunk; True when it moved the watermark."""
    mark = watermark(tx, spec.state, spec.source)
    end = _fold_end(tx, spec.source, mark, today)
    if end <= mark:
        return False
    days = tx.fetch_all(
        f"SELECT DISTINCT substr({spec.at}, 1, 10) FROM {spec.source} s{spec.joins} WHERE s.id > ? AND s.id <= ?",
        (mark, end),
    )
    rebuild_days(tx, spec, [str(d[0]) for d in days if d[0] is not None], end)
    _set_watermark(tx, spec.state, spec.source, end)
    return True


# --- per review: 👍/👎 and findings fixed in a later push ------------------------------------------------


def _chunks(values: Collection[int]) -> Iterable[list[int]]:
    ordered = sorted(values)
    for start in range(0, len(ordered), _IN):
        yield ordered[start : start + _IN]


def rebuild_outcomes(
    tx: Executor, review_ids: Collection[int], reactions_mark: int, resolved_mark: int
) -> None:
    """Sum the outcomes of ``review_ids`` again from their reactions up to ``reactions_mark`` and their
    findings with a resolution up to ``resolved_mark`` (a finding counts once, however often resolved)."""
    for chunk in _chunks(review_ids):
        marks = ", ".join("?" for _ in chunk)
        tx.execute(f"DELETE FROM {OUTCOMES} WHERE review_id IN ({marks})", tuple(chunk))
        tx.execute(
            f"INSERT INTO {OUTCOMES} (review_id, repo, review_created_at, delivery_id, up, down, fixed)"
            " SELECT r.id, o.repo, r.created_at, r.delivery_id, SUM(o.up), SUM(o.down), SUM(o.fixed) FROM ("
            " SELECT s.review_id, s.repo, CASE WHEN s.reaction_content = '+1' THEN 1 ELSE 0 END AS up,"
            " CASE WHEN s.reaction_content = '-1' THEN 1 ELSE 0 END AS down, 0 AS fixed FROM feedback_reactions s"
            f" WHERE s.review_id IN ({marks}) AND s.id <= ?"
            " UNION ALL SELECT f.review_id, fr.repo, 0, 0, 1 FROM findings f JOIN reviews fr ON fr.id = f.review_id"
            f" WHERE f.review_id IN ({marks})"
            " AND EXISTS (SELECT 1 FROM resolved_findings x WHERE x.finding_id = f.id AND x.id <= ?)"
            ") o JOIN reviews r ON r.id = o.review_id GROUP BY r.id, o.repo, r.created_at, r.delivery_id",
            (*chunk, reactions_mark, *chunk, resolved_mark),
        )


def refresh_outcomes(
    tx: Executor, review_ids: Collection[int], reactions_mark: int, resolved_mark: int
) -> None:
    """:func:`rebuild_outcomes`, and the days of those reviews in the per-memory pairs packed again."""
    if not review_ids:
        return
    rebuild_outcomes(tx, review_ids, reactions_mark, resolved_mark)
    rebuild_pair_days(tx, review_days(tx, review_ids), watermark(tx, KNOWLEDGE_STATE, HITS))


def outcome_marks(tx: Executor) -> tuple[int, int]:
    return watermark(tx, KNOWLEDGE_STATE, REACTIONS), watermark(tx, KNOWLEDGE_STATE, RESOLVED)


def _fold_outcomes(tx: Executor, today: date) -> bool:
    reactions, resolved = outcome_marks(tx)
    reactions_end = _fold_end(tx, REACTIONS, reactions, today)
    resolved_end = _fold_end(tx, RESOLVED, resolved, today)
    if reactions_end <= reactions and resolved_end <= resolved:
        return False
    touched = {
        int(r[0])
        for r in tx.fetch_all(
            "SELECT DISTINCT review_id FROM feedback_reactions WHERE id > ? AND id <= ?",
            (reactions, reactions_end),
        )
    }
    touched |= {
        int(r[0])
        for r in tx.fetch_all(
            "SELECT DISTINCT f.review_id FROM resolved_findings s JOIN findings f ON f.id = s.finding_id"
            " WHERE s.id > ? AND s.id <= ?",
            (resolved, resolved_end),
        )
    }
    refresh_outcomes(tx, touched, reactions_end, resolved_end)
    _set_watermark(tx, KNOWLEDGE_STATE, REACTIONS, reactions_end)
    _set_watermark(tx, KNOWLEDGE_STATE, RESOLVED, resolved_end)
    return True


def rebuild_outcomes_now(tx: Executor, review_ids: Collection[int]) -> None:
    """After deleting reactions: the outcomes of their reviews summed again at the current watermarks."""
    refresh_outcomes(tx, review_ids, *outcome_marks(tx))


def _fold_hits(tx: Executor, today: date) -> bool:
    """The kept memories of the new hits' days packed again, and the pairs of the reviews they belong to."""
    mark = watermark(tx, KNOWLEDGE_STATE, HITS)
    end = _fold_end(tx, HITS, mark, today)
    if end <= mark:
        return False
    new = "SELECT delivery_id FROM retrieval_hits WHERE id > ? AND id <= ? AND kept = 1"
    days = tx.fetch_all(
        f"SELECT DISTINCT substr(created_at, 1, 10) FROM {HITS} WHERE id > ? AND id <= ? AND kept = 1",
        (mark, end),
    )
    rebuild_memory_days(tx, [str(d[0]) for d in days if d[0] is not None], end)
    pair_days = tx.fetch_all(
        f"SELECT DISTINCT substr(o.review_created_at, 1, 10) FROM {OUTCOMES} o WHERE o.delivery_id IN ({new})",
        (mark, end),
    )
    rebuild_pair_days(tx, [str(d[0]) for d in pair_days], end)
    _set_watermark(tx, KNOWLEDGE_STATE, HITS, end)
    return True


# --- sealing --------------------------------------------------------------------------------------------


def _lock(tx: Executor, db: Database, tables: Sequence[str]) -> None:
    """PostgreSQL: wait for every write in flight to these tables and hold new ones until the fold commits
    (SQLite's ``BEGIN IMMEDIATE`` already serialises writers)."""
    if db.dialect == "postgresql":
        tx.execute(f"LOCK TABLE {', '.join(tables)} IN SHARE ROW EXCLUSIVE MODE")


def seal_telemetry(db: Database, today: date | None = None) -> None:
    """Fold the telemetry rows created before ``today`` into their rollups."""
    today = today or utc_today()
    for spec in (RETRIEVALS, RUNS):
        while True:
            with db.transaction() as tx:
                _lock(tx, db, [spec.source])
                if not _fold_daily(tx, spec, today):
                    break


def seal_knowledge(db: Database, today: date | None = None) -> None:
    """Fold the knowledge rows created before ``today`` into their rollups."""
    today = today or utc_today()
    for spec in (REVIEWS, FINDINGS):
        while True:
            with db.transaction() as tx:
                _lock(tx, db, ["reviews", "findings"])
                if not _fold_daily(tx, spec, today):
                    break
    while True:
        with db.transaction() as tx:
            _lock(tx, db, [HITS])
            if not _fold_hits(tx, today):
                break
    while True:
        with db.transaction() as tx:
            _lock(tx, db, [REACTIONS, RESOLVED])
            if not _fold_outcomes(tx, today):
                break


class Sealer:
    """Seals a store's past days once per UTC day, on the store's first write of the day (fail-open: a failed
    fold leaves the rows in the live tail, where the pages still count them, and is tried again the next day)."""

    def __init__(self, db: Database, seal: Callable[[Database, date], None], name: str) -> None:
        self._db = db
        self._seal = seal
        self._name = name
        self._day: date | None = None
        self._lock = threading.Lock()

    def after_write(self) -> None:
        today = utc_today()
        with self._lock:
            if self._day == today:
                return
            self._day = today
        try:
            self._seal(self._db, today)
        except Exception as exc:  # fail-open: the write itself succeeded
            from kodiai.log import get_logger

            get_logger("kodiai.storage").warning(
                "Dashboard rollups not folded (pages read those rows directly meanwhile)",
                store=self._name,
                err=f"{type(exc).__name__}: {exc}",
            )
