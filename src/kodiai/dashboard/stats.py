"""Small pure statistics the pages show (percentiles, shares), so their rules are in one place."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt


def percentile(values: Sequence[float], p: float) -> float | None:
    """The nearest-rank percentile (``p`` in 0..100) of ``values``; None when there are none.

    Nearest rank: the smallest value with at least ``p`` % of the values at or below it — always a value
    that occurred, so a p95 of 12 runs is one of the 12 durations, not an interpolation."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return float(ordered[rank - 1])


def percentile_of(values: npt.NDArray[Any], p: float) -> float | None:
    """:func:`percentile` of an array (the same rank, found by a partial sort)."""
    if not values.size:
        return None
    rank = max(1, math.ceil(p / 100 * values.size))
    return float(np.partition(values, rank - 1)[rank - 1])


def share(part: int, whole: int) -> float | None:
    """``part / whole`` (None when ``whole`` is 0: no data is not 0 %)."""
    return part / whole if whole else None


def precision(up: int, down: int) -> float | None:
    """👍 / (👍 + 👎): the share of judged outcomes that were good; None when nothing was judged."""
    return share(up, up + down)
