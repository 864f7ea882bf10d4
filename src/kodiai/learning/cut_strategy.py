"""Cut strategies: how the reranked candidate pool is cut down to what the review prompt sees.

A strategy is a callable ``(reranked, CutContext) -> CutDecision`` (see :mod:`kodiai.learning.pipeline`)
with the attributes ``name``, ``owns_recency`` and ``uses_lexical``. When ``owns_recency`` is false the
chain applies recency weighting *before* the cut (the original's order, kept for ``maxgap``); when true
the chain hands the strategy the list without recency, plus ``now`` and the recency config. When
``uses_lexical`` is true and the caller gives the chain a lexical channel, the pool also holds the
lexical channel's hits and ``CutContext.lexical`` their BM25 scores.

Distance scales (one name each, used everywhere in the evaluation):

- *raw*: the Euclidean distance between unit vectors (0..2);
- *adjusted* (the cut scale): raw × the language factor (0.85 / 1 / 1.15), before recency;
- *recency-adjusted*: adjusted × the recency multiplier ``2 - m`` (1 … 1.85 for non-critical findings).

Strategies:

- ``maxgap``: the original's adaptive max-gap threshold, on the recency-adjusted scale (the original's
  order), with the profile's floor / ceiling / minimum gap / fallback; methods ``adaptive``,
  ``percentile``, ``configured`` exactly as the original writes them.
- ``headgap``: relative rules only; the cut runs on the *adjusted* scale (or on a fused score normalised
  within each channel, when the lexical channel is on), recency only re-orders (see
  :func:`head_gap_decide`). Methods ``headgap:empty`` / ``headgap:abstain`` / ``headgap:gap`` /
  ``headgap:band``, with ``+lexical`` when a kept memory was matched by the lexical channel.
- ``headgap-v1``: the previous MiniLM default (an absolute ceiling on the best distance, relative rules
  re-run on recency-adjusted distances); kept as an evaluation reference (:class:`LegacyHeadGapCut`).
- ``fixed:<t>`` / ``fixed@recency:<t>`` / ``top<k>``: the evaluation's baselines (:class:`FixedCut`,
  :class:`TopKCut`).
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from kodiai.learning.adaptive_threshold import AdaptiveThresholdConfig, AdaptiveThresholdResult
from kodiai.learning.pipeline import CutContext, CutDecision, max_gap_cut
from kodiai.learning.recency import DEFAULT_RECENCY_CONFIG, apply_recency_weighting, recency_multiplier
from kodiai.learning.types import RerankedResult

StrategyName = Literal["maxgap", "headgap"]
_Id = TypeVar("_Id", bound=Hashable)
STRATEGY_NAMES: tuple[StrategyName, ...] = ("maxgap", "headgap")
LEXICAL_SUFFIX = "+lexical"


class NamedCut(Protocol):
    """A cut strategy the chain can run, with its name, where recency goes and whether it fuses lexical."""

    name: str
    owns_recency: bool
    uses_lexical: bool

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision: ...


@dataclass(frozen=True, slots=True)
class Candidate(Generic[_Id]):
    """One pool member as a cut sees it: ``distance`` on the adjusted scale (before recency),
    ``multiplier`` the recency multiplier (1 without recency), ``lexical`` the BM25 score (0 = no match)."""

    id: _Id
    distance: float
    multiplier: float = 1.0
    lexical: float = 0.0

    @property
    def weighted(self) -> float:
        """The recency-adjusted distance (what ``apply_recency_weighting`` computes)."""
        return self.distance * self.multiplier


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


def _result(
    threshold: float, method: str, n: int, gap: float | None = None, at: int | None = None
) -> AdaptiveThresholdResult:
    return AdaptiveThresholdResult.model_validate(
        {"threshold": threshold, "method": method, "candidate_count": n, "gap_size": gap, "gap_index": at}
    )


# ---- the original's cut ----------------------------------------------------------------------------


class MaxGapCut:
    """The original's cut, with a profile's constants (``fallback`` replaces the configured threshold)."""

    name = "maxgap"
    owns_recency = False
    uses_lexical = False

    def __init__(self, config: AdaptiveThresholdConfig | None = None, fallback: float | None = None) -> None:
        self.config = config
        self.fallback = fallback

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
        update: dict[str, object] = {}
        if self.config is not None and ctx.adaptive_config is None:
            update["adaptive_config"] = self.config
        if self.fallback is not None and ctx.adaptive:
            update["distance_threshold"] = self.fallback
        return max_gap_cut(reranked, ctx.model_copy(update=update) if update else ctx)


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


# ---- evaluation baselines ----------------------------------------------------------------------------

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
