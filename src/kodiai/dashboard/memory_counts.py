"""The memory page's counts per memory, in memory (numpy): from the packed per-day rollups
(:mod:`kodiai.storage.rollups_packed`) and the few rows past them, the most retrieved memories, those only ever
shown beside 👎, and the per-repository figures — in the plain SQL's order and ties (count, then repository
name, then finding id). Pure: no database."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kodiai.storage.rollups_packed import INT

Key = tuple[str, int]
Outcomes = tuple[int, int, int]
PageRow = tuple[Key, int, Outcomes]
"""A listed memory: its key, the range's reviews that kept it, and its outcomes."""
Ints = npt.NDArray[np.int64]


def unpack(names: str | None, blob: Any, width: int) -> tuple[list[str], Ints]:
    """A packed day (:mod:`kodiai.storage.rollups_packed`): its names and its (n, ``width``) array."""
    array = np.frombuffer(bytes(blob or b""), dtype=INT).reshape(-1, width).astype(np.int64)
    return (json.loads(names) if names else []), array


@dataclass
class Parts:
    """What the statement read: packed arrays with the names their repository columns index, and rows."""

    kept: list[tuple[list[str], Ints]] = field(default_factory=list)
    """``[reviewing repo, source, finding id, count]`` arrays."""
    kept_rows: list[tuple[str, str, int, int]] = field(default_factory=list)
    pairs: list[tuple[list[str], Ints]] = field(default_factory=list)
    """``[reviewing repo, outcome repo, source, finding id, 👍, 👎, fixed]`` arrays."""
    pair_rows: list[tuple[str, str, str, int, int, int, int]] = field(default_factory=list)


@dataclass
class Counted:
    top: list[PageRow]
    flagged: list[PageRow]
    kept_by_repo: dict[str, tuple[int, int]]
    """repository → (retrieved, distinct memories retrieved)."""
    judged_by_repo: dict[str, tuple[int, int, int, int]]
    """repository → (👍, 👎, memories only beside 👎, fixed)."""


def _stack(
    packed: Sequence[tuple[list[str], Ints]],
    rows: Sequence[Sequence[Any]],
    text_columns: int,
    width: int,
    code: dict[str, int],
) -> Ints:
    """One array in global codes: each packed array's name indexes mapped, then the rows."""
    arrays = []
    for names, array in packed:
        if array.size:
            remap = np.asarray([code[n] for n in names], dtype=np.int64)
            mapped = array.copy()
            mapped[:, :text_columns] = remap[array[:, :text_columns]]
            arrays.append(mapped)
    if rows:
        arrays.append(
            np.asarray(
                [[code[str(v)] for v in r[:text_columns]] + [int(v) for v in r[text_columns:]] for r in rows]
            )
        )
    return np.concatenate(arrays).astype(np.int64) if arrays else np.zeros((0, width), dtype=np.int64)


def _group(keys: Ints, values: Ints) -> tuple[Ints, Ints]:
    """Unique ``keys`` rows (sorted: code, then finding) and ``values`` summed per key (columns)."""
    if not len(keys):
        return np.zeros((0, 2), dtype=np.int64), np.zeros((0, values.shape[1]), dtype=np.int64)
    order = np.lexsort((keys[:, 1], keys[:, 0]))
    keys, values = keys[order], values[order]
    starts = np.flatnonzero(np.concatenate(([True], (keys[1:] != keys[:-1]).any(axis=1))))
    return keys[starts], np.add.reduceat(values, starts, axis=0)


def _find(keys: Ints, code: int, fid: int) -> int:
    """The row of ``(code, fid)`` in sorted ``keys``, or -1."""
    lo, hi = np.searchsorted(keys[:, 0], code, "left"), np.searchsorted(keys[:, 0], code, "right")
    at = lo + int(np.searchsorted(keys[lo:hi, 1], fid))
    return int(at) if at < hi and keys[at, 1] == fid else -1


def count(parts: Parts, wanted: Collection[str] | None, forgotten: Collection[Key], limit: int) -> Counted:
    """The page's figures of the viewer's memories (``wanted``: the repositories a memory and its outcome must
    be in; None: every one). ``forgotten`` memories are not flagged."""
    names: list[str] = sorted(
        {n for ns, _ in (*parts.kept, *parts.pairs) for n in ns}
        | {str(r[i]) for r in parts.kept_rows for i in (0, 1)}
        | {str(r[i]) for r in parts.pair_rows for i in (0, 1, 2)}
    )
    code = {n: i for i, n in enumerate(names)}
    allowed = np.ones(len(names), dtype=bool)
    if wanted is not None:
        allowed = np.asarray([n in set(wanted) for n in names], dtype=bool)

    kept = _stack(parts.kept, parts.kept_rows, 2, 4, code)
    if wanted is not None and len(kept):  # the reviewing repository and the memory's
        kept = kept[allowed[kept[:, 0]] & allowed[kept[:, 1]]]
    keys, sums = _group(kept[:, 1:3], kept[:, 3:4])
    counts = sums[:, 0] if len(sums) else np.zeros(0, dtype=np.int64)
    pairs = _stack(parts.pairs, parts.pair_rows, 3, 7, code)
    if wanted is not None and len(pairs):  # and the outcome's
        pairs = pairs[allowed[pairs[:, 0]] & allowed[pairs[:, 1]] & allowed[pairs[:, 2]]]
    jkeys, judged = _group(pairs[:, 2:4], pairs[:, 4:7])

    order: list[int] = np.lexsort((keys[:, 1], keys[:, 0], -counts))[:limit].tolist() if len(keys) else []
    top = [
        ((names[keys[i, 0]], int(keys[i, 1])), int(counts[i]), _outcomes(jkeys, judged, keys[i]))
        for i in order
    ]

    gone = {(code[r], f) for r, f in forgotten if r in code}
    only_down = (judged[:, 1] > 0) & (judged[:, 0] == 0) if len(judged) else np.zeros(0, dtype=bool)
    ranked = np.nonzero(only_down)[0]
    ranked = ranked[np.lexsort((jkeys[ranked, 1], jkeys[ranked, 0], -judged[ranked, 1]))]
    candidates: list[int] = []
    for r in ranked.tolist():
        if len(candidates) == limit:
            break
        if (int(jkeys[r, 0]), int(jkeys[r, 1])) not in gone:
            candidates.append(r)
    flagged = []
    for i in candidates:
        at = _find(keys, int(jkeys[i, 0]), int(jkeys[i, 1])) if len(keys) else -1
        flagged.append(
            (
                (names[jkeys[i, 0]], int(jkeys[i, 1])),
                int(counts[at]) if at >= 0 else 0,
                (int(judged[i, 0]), int(judged[i, 1]), int(judged[i, 2])),
            )
        )

    kept_by_repo: dict[str, tuple[int, int]] = {}
    if len(keys):
        retrieved = np.bincount(keys[:, 0], weights=counts, minlength=len(names))
        distinct = np.bincount(keys[:, 0], minlength=len(names))
        for c in np.unique(keys[:, 0]):
            kept_by_repo[names[c]] = (round(float(retrieved[c])), int(distinct[c]))
    judged_by_repo: dict[str, tuple[int, int, int, int]] = {}
    if len(jkeys):
        columns = [*(judged[:, i] for i in range(3)), only_down.astype(np.int64)]
        per = [np.bincount(jkeys[:, 0], weights=col, minlength=len(names)) for col in columns]
        for c in np.unique(jkeys[:, 0]):
            up, down, fixed, flagged_n = (round(float(p[c])) for p in per)
            judged_by_repo[names[c]] = (up, down, flagged_n, fixed)
    return Counted(top, flagged, kept_by_repo, judged_by_repo)


def _outcomes(jkeys: Ints, judged: Ints, key: Ints) -> Outcomes:
    at = _find(jkeys, int(key[0]), int(key[1])) if len(jkeys) else -1
    return (int(judged[at, 0]), int(judged[at, 1]), int(judged[at, 2])) if at >= 0 else (0, 0, 0)
