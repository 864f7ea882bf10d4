"""The chain's reranked pool as :class:`~kodiai.learning.threshold.types.Candidate` rows, with the
recency multipliers a cut (or the re-review scope, or the stages) needs to weigh them."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from kodiai.learning.recency import DEFAULT_RECENCY_CONFIG, recency_multiplier
from kodiai.learning.threshold.types import Candidate, CutContext
from kodiai.learning.types import RerankedResult

_Id = TypeVar("_Id", bound=Hashable)


def recency_multipliers(reranked: Sequence[RerankedResult], ctx: CutContext) -> list[float]:
    """Each result's recency multiplier ``2 - m`` as :func:`apply_recency_weighting` applies it (1.0 each
    when the chain runs without recency)."""
    if not ctx.recency:
        return [1.0] * len(reranked)
    config = ctx.recency_config or DEFAULT_RECENCY_CONFIG
    at = ctx.now if ctx.now is not None else datetime.now(UTC)
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return [recency_multiplier(r.record.created_at, r.record.severity, at, config) for r in reranked]


def candidates_of(reranked: Sequence[RerankedResult], ctx: CutContext) -> list[Candidate[int]]:
    """The chain's pool as :class:`Candidate` rows (ids are memory ids)."""
    lexical = ctx.lexical or {}
    return [
        Candidate(r.memory_id, r.adjusted_distance, m, lexical.get(r.memory_id, 0.0))
        for r, m in zip(reranked, recency_multipliers(reranked, ctx), strict=True)
    ]


def weighted_order(pool: Sequence[Candidate[_Id]]) -> list[Candidate[_Id]]:
    """``pool`` (ascending adjusted distance) re-sorted by recency-adjusted distance, stable — the order
    :func:`apply_recency_weighting` gives."""
    return sorted(pool, key=lambda c: c.weighted)
