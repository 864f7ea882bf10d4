"""Per-day rollups of what a sum cannot carry (issue 28, the dashboard): for each UTC day, the memories the
retrievals kept (how often each), the outcomes shown beside each memory, and the model runs' durations and
costs — packed as little-endian 64-bit arrays. A page then reads a row per day (per day and repository for the
runs) and counts per memory, or takes a percentile, in memory: exactly what grouping every row would give,
without a row per retrieval.

Why packed: a memory is rarely retrieved twice on one day, so a row per (day, memory) would be as many rows as
retrievals, and grouping them per memory (or sorting every run for a p95) is what made a month's page slow.

Rows (``names`` a JSON list; the arrays' repository columns index into it):

- ``dashboard_memory_daily``, one per day: ``kept`` = (n, 4) ``[reviewing repo, source repo, finding id,
  kept count]``, retrievals on that day (``retrieval_hits.created_at``) up to the hits' watermark;
- ``dashboard_memory_outcomes_daily``, one per day: ``pairs`` = (n, 7) ``[reviewing repo, outcome repo, source
  repo, finding id, 👍, 👎, fixed]``: the outcomes (:data:`~kodiai.storage.rollups.OUTCOMES`) of the reviews
  created that day, once for each memory their retrieval kept up to the hits' watermark;
- ``dashboard_run_values_daily``, one per day and repository: ``durations`` (int64) and ``costs`` (float64)
  of the runs of that day.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from typing import Any

from kodiai.storage.database import Executor

INT = "<i8"
"""The packed integers' numpy dtype (little-endian 64-bit); packing needs only :mod:`struct` (no numpy here:
the light CLI commands open the stores)."""
REAL = "<f8"
MEMORY = "dashboard_memory_daily"
PAIRS = "dashboard_memory_outcomes_daily"
RUN_VALUES = "dashboard_run_values_daily"
KEPT_WIDTH = 4
PAIR_WIDTH = 7


def pack_ints(values: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(values)}q", *values)


def pack_reals(values: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(values)}d", *values)


def pack(names: Sequence[str], rows: Sequence[Sequence[int]]) -> tuple[str, bytes]:
    """``rows`` (repository columns already replaced by their index in ``names``): the JSON names and the
    bytes, row after row."""
    return json.dumps(list(names)), pack_ints([int(v) for row in rows for v in row])


def day_where(column: str, day: str) -> tuple[str, tuple[object, ...]]:
    """``column`` on ``day`` (a range its index can read; a malformed day found the slow way)."""
    try:
        end = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
    except ValueError:
        return f"substr({column}, 1, 10) = ?", (day,)
    return f"{column} >= ? AND {column} < ?", (day, end)


def _names_index(names: Iterable[str]) -> dict[str, int]:
    return {name: i for i, name in enumerate(sorted(set(names)))}


def _store(tx: Executor, table: str, column: str, day: str, rows: list[tuple[Any, ...]], text: int) -> None:
    """One day's ``rows`` (their first ``text`` columns repository names) packed into ``table``."""
    if not rows:
        return
    index = _names_index(str(v) for r in rows for v in r[:text])
    names, blob = pack(list(index), [(*(index[str(v)] for v in r[:text]), *r[text:]) for r in rows])
    tx.execute(f"INSERT INTO {table} (day, names, {column}) VALUES (?, ?, ?)", (day, names, blob))


def rebuild_memory_days(tx: Executor, days: Iterable[str], hits_mark: int) -> None:
    """The kept memories of each of ``days`` packed again from the hits up to ``hits_mark``."""
    for day in sorted(set(days)):
        tx.execute(f"DELETE FROM {MEMORY} WHERE day = ?", (day,))
        where, params = day_where("created_at", day)
        rows = tx.fetch_all(
            "SELECT repo, source_repo, finding_id, COUNT(*) FROM retrieval_hits WHERE kept = 1"
            f" AND finding_id IS NOT NULL AND id <= ? AND {where} GROUP BY repo, source_repo, finding_id",
            (hits_mark, *params),
        )
        _store(tx, MEMORY, "kept", day, [(r[0], r[1], int(r[2]), int(r[3])) for r in rows], 2)


def rebuild_pair_days(tx: Executor, days: Iterable[str], hits_mark: int) -> None:
    """The outcomes beside each memory of the reviews created on each of ``days``, packed again (the
    outcome rollup as it is, joined to the kept hits up to ``hits_mark``)."""
    for day in sorted(set(days)):
        tx.execute(f"DELETE FROM {PAIRS} WHERE day = ?", (day,))
        where, params = day_where("o.review_created_at", day)
        rows = tx.fetch_all(
            "SELECT h.repo, o.repo, h.source_repo, h.finding_id, SUM(o.up), SUM(o.down), SUM(o.fixed)"
            " FROM dashboard_review_outcomes o JOIN retrieval_hits h ON h.delivery_id = o.delivery_id"
            f" WHERE h.kept = 1 AND h.finding_id IS NOT NULL AND h.id <= ? AND o.delivery_id IS NOT NULL AND {where}"
            " GROUP BY h.repo, o.repo, h.source_repo, h.finding_id",
            (hits_mark, *params),
        )
        _store(tx, PAIRS, "pairs", day, [(r[0], r[1], r[2], *(int(v) for v in r[3:])) for r in rows], 3)


def review_days(tx: Executor, review_ids: Iterable[int]) -> set[str]:
    ids = sorted(set(review_ids))
    out: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        out |= {
            str(r[0])
            for r in tx.fetch_all(
                f"SELECT DISTINCT substr(created_at, 1, 10) FROM reviews WHERE id IN ({', '.join('?' for _ in chunk)})",
                tuple(chunk),
            )
        }
    return out


def rebuild_run_value_days(tx: Executor, days: Iterable[str], mark: int) -> None:
    """The durations and costs of each of ``days``' runs up to ``mark``, packed again per repository."""
    for day in sorted(set(days)):
        tx.execute(f"DELETE FROM {RUN_VALUES} WHERE day = ?", (day,))
        where, params = day_where("created_at", day)
        rows = tx.fetch_all(
            f"SELECT repo, duration_ms, cost_usd FROM executions WHERE id <= ? AND {where}", (mark, *params)
        )
        by_repo: dict[str, tuple[list[int], list[float]]] = {}
        for repo, duration, cost in rows:
            got = by_repo.setdefault(str(repo), ([], []))
            got[0].append(int(duration or 0))
            got[1].append(float(cost or 0))
        for repo, (durations, costs) in by_repo.items():
            tx.execute(
                f"INSERT INTO {RUN_VALUES} (day, repo, durations, costs) VALUES (?, ?, ?, ?)",
                (day, repo, pack_ints(durations), pack_reals(costs)),
            )
