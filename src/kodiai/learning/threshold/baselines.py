"""The evaluation's baseline cuts (``fixed:<t>`` / ``fixed@recency:<t>`` / ``topk``) and
:func:`replay_ids`, which replays any cut whose decision is a pure function of the pool (calibration and
leave-one-out use it instead of re-running the chain)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal, TypeVar

from kodiai.learning.recency import apply_recency_weighting
from kodiai.learning.threshold.head_gap import (
    HeadGapCut,
    LegacyHeadGapCut,
    head_gap_decide,
    legacy_head_gap_select,
)
from kodiai.learning.threshold.pool import candidates_of, weighted_order
from kodiai.learning.threshold.types import Candidate, CutContext, CutDecision
from kodiai.learning.threshold.types import threshold_result as _result
from kodiai.learning.types import RerankedResult

_Id = TypeVar("_Id", bound=Hashable)

FixedScale = Literal["adjusted", "recency"]


def fixed_select(
    pool: Sequence[Candidate[_Id]], threshold: float, top_k: int, scale: FixedScale
) -> list[_Id]:
    """Keep distance ``≤ threshold`` on ``scale``, order by recency-adjusted distance, then ``top_k``."""
    ordered = weighted_order(pool)
    if scale == "adjusted":
        return [c.id for c in ordered if c.distance <= threshold][:top_k]
    return [c.id for c in ordered if c.weighted <= threshold][:top_k]


class FixedCut:
    """A fixed threshold: ``scale="adjusted"`` (default) cuts on the adjusted distance before recency — the
    scale ``headgap`` cuts on — then orders by recency; ``scale="recency"`` cuts on the recency-adjusted
    distance (the original's order, recency before the cut)."""

    owns_recency = True
    uses_lexical = False

    def __init__(self, threshold: float, scale: FixedScale = "adjusted") -> None:
        self.threshold = threshold
        self.scale: FixedScale = scale
        self.name = f"fixed:{threshold:g}" if scale == "adjusted" else f"fixed@recency:{threshold:g}"

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
        weighted = apply_recency_weighting(reranked, ctx.now, ctx.recency_config) if ctx.recency else None
        ids = fixed_select(candidates_of(reranked, ctx), self.threshold, ctx.top_k, self.scale)
        by_id = {r.memory_id: r for r in (weighted if weighted is not None else reranked)}
        return CutDecision(
            results=[by_id[i] for i in ids], threshold=_result(self.threshold, "fixed", len(reranked))
        )


class TopKCut:
    """No cut: the first ``top_k`` by recency-adjusted distance (the "top-k, no cut" baseline)."""

    name = "topk"
    owns_recency = True
    uses_lexical = False

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
        weighted = apply_recency_weighting(reranked, ctx.now, ctx.recency_config) if ctx.recency else None
        kept = list(weighted if weighted is not None else reranked)[: ctx.top_k]
        farthest = max((r.adjusted_distance for r in kept), default=-1.0)
        return CutDecision(results=kept, threshold=_result(farthest, "topk", len(reranked)))


def replay_ids(
    pool: Sequence[Candidate[_Id]], cut: object, top_k: int, *, lexical: bool, recency: bool
) -> list[_Id]:
    """What ``cut`` keeps from ``pool`` without the chain (for calibration and leave-one-out), for the cut
    kinds whose decision is a pure function of the pool; raises ``TypeError`` for any other. ``lexical``:
    the pool came with the lexical channel; ``recency``: the chain ran with recency (multipliers ≠ 1)."""
    if isinstance(cut, HeadGapCut):
        return head_gap_decide(pool, top_k, cut.params, lexical=lexical)[0]
    if isinstance(cut, FixedCut):
        return fixed_select(pool, cut.threshold, top_k, cut.scale)
    if isinstance(cut, TopKCut):
        return [c.id for c in weighted_order(pool)][:top_k]
    if isinstance(cut, LegacyHeadGapCut):
        plain = [(c.id, c.distance) for c in pool]
        weighted = [(c.id, c.weighted) for c in weighted_order(pool)] if recency else None
        return legacy_head_gap_select(plain, weighted, top_k, cut.params)[0]
    raise TypeError(f"no replay for {type(cut).__name__}")
