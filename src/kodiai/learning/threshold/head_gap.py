"""The relative cut ``headgap`` (the default for every embedder but voyage-code-3) and ``headgap-v1``, its
previous version (kept as an evaluation reference).

A strategy is a callable ``(reranked, CutContext) -> CutDecision`` (:mod:`kodiai.learning.threshold.types`)
with the attributes ``name``, ``owns_recency`` and ``uses_lexical``. When ``owns_recency`` is false the
chain applies recency weighting *before* the cut (the original's order, kept for ``maxgap``); when true
the chain hands the strategy the list without recency, plus ``now`` and the recency config. When
``uses_lexical`` is true and the caller gives the chain a lexical channel, the pool also holds the
lexical channel's hits and ``CutContext.lexical`` their BM25 scores.

Distance scales (one name each, used everywhere in the evaluation):

- *raw*: the Euclidean distance between unit vectors (0..2);
- *adjusted* (the cut scale): raw × the language factor (0.85 / 1 / 1.15), before recency;
- *recency-adjusted*: adjusted × the recency multiplier ``2 - m`` (1 … 1.85 for non-critical findings).

Strategies (the others: ``maxgap`` in :mod:`.max_gap`, the baselines in :mod:`.baselines`):

- ``headgap``: relative rules only; the cut runs on the *adjusted* scale (or on a fused score normalised
  within each channel, when the lexical channel is on), recency only re-orders (see
  :func:`head_gap_decide`). Methods ``headgap:empty`` / ``headgap:abstain`` / ``headgap:gap`` /
  ``headgap:band``, with ``+lexical`` when a kept memory was matched by the lexical channel.
- ``headgap-v1``: the previous MiniLM default (an absolute ceiling on the best distance, relative rules
  re-run on recency-adjusted distances); kept as an evaluation reference (:class:`LegacyHeadGapCut`).
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Sequence
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from kodiai.learning.recency import apply_recency_weighting
from kodiai.learning.threshold.max_gap import max_gap_cut
from kodiai.learning.threshold.pool import candidates_of
from kodiai.learning.threshold.types import (
    AdaptiveThresholdResult,
    Candidate,
    CutContext,
    CutDecision,
)
from kodiai.learning.threshold.types import threshold_result as _result
from kodiai.learning.types import RerankedResult

_Id = TypeVar("_Id", bound=Hashable)
LEXICAL_SUFFIX = "+lexical"


# ---- headgap: relative rules, recency re-orders --------------------------------------------------------


class HeadGapParams(BaseModel):
    """Tuning of ``headgap``. Every rule is relative to the query's own pool except the two optional
    absolute gates (``ceiling``, ``floor``), which are off in the built-in profiles."""

    model_config = ConfigDict(frozen=True)

    band: float = Field(
        0.5, ge=0, description="Vector only: keep similarity ≥ best - band (similarity in [0, 1])."
    )
    lexical_weight: float = Field(
        0.0, ge=0, le=1, description="Weight of the lexical channel in the fused score (0 = channel off)."
    )
    lexical_band: float = Field(0.25, ge=0, description="The band on the fused score (in [0, 1]).")
    recency_margin: float | None = Field(
        0.1,
        ge=0,
        description="Drop a memory when a kept one is at least as similar and its recency multiplier is "
        "this much smaller (None = recency only re-orders).",
    )
    head: int = Field(5, ge=1, description="How many leading gaps the gap rule searches.")
    min_gap: float = Field(
        0.0, ge=0, description="Gap rule on the normalised score: cut at a gap this large (0 = off)."
    )
    min_prominence: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="Abstain unless d1 ≤ median(pool) · (1 - min_prominence) (relative; 0 = off).",
    )
    ceiling: float | None = Field(
        None, gt=0, description="Abstain when d1 is farther (absolute; None = off)."
    )
    floor: float = Field(0.0, ge=0, description="Distances this close are always kept (absolute; 0 = off).")


def _similarities(distances: Sequence[float]) -> list[float]:
    """Distances → similarity in [0, 1] normalised within the pool: best 1, worst 0 (all 1 when equal)."""
    lo, hi = min(distances), max(distances)
    if hi - lo <= 1e-12:
        return [1.0] * len(distances)
    return [(hi - d) / (hi - lo) for d in distances]


def head_gap_decide(
    pool: Sequence[Candidate[_Id]], top_k: int, params: HeadGapParams, *, lexical: bool = False
) -> tuple[list[_Id], AdaptiveThresholdResult]:
    """The ``headgap`` decision over one pool: the ids kept, in final order, and the branch taken.

    ``pool`` is ascending by adjusted distance. ``lexical`` says the lexical channel ran (its scores are in
    ``Candidate.lexical``). Steps:

    1. no candidates → ``headgap:empty``;
    2. gates on the adjusted distance of the best match ``d1`` (before recency): the absolute ``ceiling``
       and the relative ``min_prominence`` (``d1 > median · (1 - p)``) → ``headgap:abstain``;
    3. score: vector similarity ``v = (d_max - d) / (d_max - d_min)``; with the lexical channel, the fused
       ``f = (1 - w) · v + w · s / s_max`` (each channel normalised within the pool before fusion);
    4. keep ``f ≥ f_best - band`` (``headgap:band``), or, when ``min_gap`` is on and one of the first
       ``head`` gaps of the descending scores reaches it, what lies before the largest (``headgap:gap``);
       distances ``≤ floor`` are always kept;
    5. recency (``recency_margin``): a kept memory is dropped only when another kept memory is at least
       as similar *and* clearly newer (``m_i ≥ m_j · (1 + margin)``) — age alone never removes a memory,
       and the most similar memory is never dropped for a newer, less similar one;
    6. the ``top_k`` most similar of what is kept (similarity decides the cut, not recency), ordered by
       ``f / m`` (recency-adjusted: a newer memory of similar standing comes first).

    The threshold reported is the farthest kept adjusted distance (-1 when nothing is kept).
    """
    n = len(pool)
    if n == 0:
        return [], _result(-1.0, "headgap:empty", 0)
    distances = [c.distance for c in pool]
    d1 = min(distances)
    if params.ceiling is not None and d1 > params.ceiling:
        return [], _result(-1.0, "headgap:abstain", n)
    if (
        params.min_prominence > 0
        and n >= 3
        and d1 > statistics.median(distances) * (1 - params.min_prominence)
    ):
        return [], _result(-1.0, "headgap:abstain", n)
    score = _similarities(distances)
    fused = lexical and params.lexical_weight > 0
    if fused:
        best_lexical = max(c.lexical for c in pool)
        w = params.lexical_weight
        score = [
            (1 - w) * v + w * (c.lexical / best_lexical if best_lexical > 0 else 0.0)
            for v, c in zip(score, pool, strict=True)
        ]
    band = params.lexical_band if fused else params.band
    by_score = sorted(range(n), key=lambda i: -score[i])  # stable: ties keep the distance order
    best = score[by_score[0]]
    keep = {i for i in range(n) if score[i] >= best - band - 1e-12}
    method, gap_size, gap_at = "headgap:band", None, None
    if params.min_gap > 0 and n > 1:
        head = [score[i] for i in by_score[: min(params.head, n - 1, top_k) + 1]]
        gaps = [head[i] - head[i + 1] for i in range(len(head) - 1)]
        at = max(range(len(gaps)), key=lambda i: gaps[i])
        if gaps[at] >= params.min_gap:
            keep = set(by_score[: at + 1])
            method, gap_size, gap_at = "headgap:gap", gaps[at], at + 1
    keep |= {i for i in range(n) if distances[i] <= params.floor}
    if params.recency_margin is not None:
        factor = 1 + params.recency_margin
        kept = sorted(keep)
        keep = {
            i
            for i in kept
            if not any(
                j != i and score[j] >= score[i] and pool[i].multiplier >= pool[j].multiplier * factor
                for j in kept
            )
        }
    rank = {i: r for r, i in enumerate(by_score)}
    # top_k by similarity (recency does not decide what is cut), then ordered by recency-adjusted score.
    chosen = sorted(keep, key=lambda i: rank[i])[:top_k]
    final = sorted(chosen, key=lambda i: (-score[i] / pool[i].multiplier, rank[i]))
    if fused and any(pool[i].lexical > 0 for i in final):
        method += LEXICAL_SUFFIX
    threshold = max(distances[i] for i in final)
    return [pool[i].id for i in final], _result(threshold, method, n, gap_size, gap_at)


class HeadGapCut:
    """The relative cut (:func:`head_gap_decide`). It owns recency: weighting re-orders, and removes a
    memory only in favour of a newer one that is at least as similar. With ``params.lexical_weight > 0``
    it fuses the lexical channel when the chain was given one (else it runs on the vector channel alone)."""

    name = "headgap"
    owns_recency = True

    def __init__(self, params: HeadGapParams | None = None, name: str | None = None) -> None:
        self.params = params or HeadGapParams()
        if name is not None:
            self.name = name
        self.uses_lexical = self.params.lexical_weight > 0

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
        weighted = apply_recency_weighting(reranked, ctx.now, ctx.recency_config) if ctx.recency else None
        if not ctx.adaptive:
            # `adaptive: false` opts out of any adaptive cut: recency order, then the first top_k under the
            # configured threshold (isolation filtered by it), exactly as the original's non-adaptive path.
            return max_gap_cut(weighted if weighted is not None else reranked, ctx)
        ids, decision = head_gap_decide(
            candidates_of(reranked, ctx), ctx.top_k, self.params, lexical=ctx.lexical is not None
        )
        by_id = {r.memory_id: r for r in (weighted if weighted is not None else reranked)}
        return CutDecision(results=[by_id[i] for i in ids], threshold=decision)


# ---- headgap-v1: the previous MiniLM default (evaluation reference) ----------------------------------


class LegacyHeadGapParams(BaseModel):
    """The previous ``headgap`` rules: relative gap / band on distances, an absolute ceiling gate."""

    model_config = ConfigDict(frozen=True)

    head: int = Field(5, ge=1)
    min_relative_gap: float = Field(0.06, ge=0)
    band: float = Field(0.08, ge=0)
    ceiling: float | None = Field(None, gt=0)
    floor: float = Field(0.0, ge=0)
    min_prominence: float = Field(0.0, ge=0, lt=1)


def legacy_head_gap_threshold(
    distances: Sequence[float], top_k: int, params: LegacyHeadGapParams
) -> AdaptiveThresholdResult:
    """The v1 decision over ``distances``: a threshold (keep ``≤ threshold``) and the branch."""
    n = len(distances)
    if n == 0:
        return _result(-1.0, "headgap:empty", 0)
    d = sorted(distances)
    if params.ceiling is not None and d[0] > params.ceiling:
        return _result(-1.0, "headgap:abstain", n)
    if params.min_prominence > 0 and n >= 3 and d[0] > statistics.median(d) * (1 - params.min_prominence):
        return _result(-1.0, "headgap:abstain", n)
    best_gap, best_at = 0.0, 0
    for i in range(1, min(params.head, n - 1, top_k) + 1):
        gap = (d[i] - d[i - 1]) / max(d[i - 1], 1e-12)
        if gap > best_gap:
            best_gap, best_at = gap, i
    floor_keep = max((x for x in d if x <= params.floor), default=-1.0)
    if best_at and best_gap >= params.min_relative_gap:
        return _result(max(d[best_at - 1], floor_keep), "headgap:gap", n, best_gap, best_at)
    threshold = max(d[0] * (1 + params.band), floor_keep)
    return _result(threshold, "headgap:band", n, best_gap if best_at else None, best_at or None)


def legacy_head_gap_select(
    plain: Sequence[tuple[_Id, float]],
    weighted: Sequence[tuple[_Id, float]] | None,
    top_k: int,
    params: LegacyHeadGapParams,
) -> tuple[list[_Id], AdaptiveThresholdResult]:
    """The ids v1 keeps, in final order: the gate on ``plain`` (adjusted) distances, the relative rules
    again on ``weighted`` (recency-adjusted) ones, plus what lay before a clear unweighted gap."""
    base = legacy_head_gap_threshold([d for _, d in plain], top_k, params)
    kept_plain = [i for i, d in plain if d <= base.threshold]
    if weighted is None or base.method in ("headgap:empty", "headgap:abstain"):
        return kept_plain[:top_k], base
    relative = params.model_copy(update={"ceiling": None, "min_prominence": 0.0, "floor": 0.0})
    decision = legacy_head_gap_threshold([w for _, w in weighted], top_k, relative)
    protected = set(kept_plain) if base.method == "headgap:gap" else set()
    first = [i for i, _ in weighted if i in protected][:top_k]
    rest = [i for i, w in weighted if i not in protected and w <= decision.threshold]
    chosen = set([*first, *rest][:top_k])
    return [i for i, _ in weighted if i in chosen], decision


class LegacyHeadGapCut:
    """``headgap-v1``, for the evaluation's comparison with the previous default."""

    name = "headgap-v1"
    owns_recency = True
    uses_lexical = False

    def __init__(self, params: LegacyHeadGapParams | None = None) -> None:
        self.params = params or LegacyHeadGapParams()

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
        weighted = apply_recency_weighting(reranked, ctx.now, ctx.recency_config) if ctx.recency else None
        if not ctx.adaptive:
            return max_gap_cut(weighted if weighted is not None else reranked, ctx)
        ids, decision = legacy_head_gap_select(
            [(r.memory_id, r.adjusted_distance) for r in reranked],
            [(w.memory_id, w.adjusted_distance) for w in weighted] if weighted is not None else None,
            ctx.top_k,
            self.params,
        )
        by_id = {r.memory_id: r for r in (weighted if weighted is not None else reranked)}
        return CutDecision(results=[by_id[i] for i in ids], threshold=decision)
