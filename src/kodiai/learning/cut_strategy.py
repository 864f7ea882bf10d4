"""Cut strategies: how the reranked candidate pool is cut down to what the review prompt sees.

A strategy is a callable ``(reranked, CutContext) -> CutDecision`` (see :mod:`kodiai.learning.pipeline`)
with two attributes: ``name`` and ``owns_recency``. When ``owns_recency`` is false the chain applies
recency weighting *before* the cut (the original's order, kept for ``maxgap``); when true the chain
hands the strategy the list without recency, plus ``now`` and the recency config, and the strategy
uses recency to re-order, so an old memory can rank lower but a clear match is never dropped for its age.

- ``maxgap``: the original's adaptive max-gap threshold (:func:`compute_adaptive_threshold`), with the
  profile's floor / ceiling / minimum gap / fallback; telemetry methods ``adaptive``, ``percentile``,
  ``configured`` exactly as the original writes them.
- ``headgap``: scale-free. Only the head of the list (the first ``head`` gaps) is searched for a gap, and
  a gap counts by its size *relative* to the distance before it, so the rule reads the same on any
  embedder's scale. Absolute and relative guards let it abstain. Methods (for ``GROUP BY threshold_method``):

  - ``headgap:empty``: no candidates at all;
  - ``headgap:abstain``: the best candidate is above the ceiling (the one absolute number, a per-model
    gate), or not prominent enough against the pool (``d1 > median · (1 - min_prominence)``): nothing
    is kept;
  - ``headgap:gap``: a relative gap ``≥ min_relative_gap`` in the head; keep what lies before it;
  - ``headgap:band``: no clear gap; keep the top results within ``band`` (relative) of the best one,
    up to ``top_k``.

  With recency on, the branch named is that of the decision on the recency-weighted distances.

- ``fixed:<t>``: keep adjusted distances ``≤ t`` (the evaluation's baseline; method ``fixed``).
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Sequence
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from kodiai.learning.adaptive_threshold import AdaptiveThresholdConfig, AdaptiveThresholdResult
from kodiai.learning.pipeline import CutContext, CutDecision, max_gap_cut
from kodiai.learning.recency import apply_recency_weighting
from kodiai.learning.types import RerankedResult

StrategyName = Literal["maxgap", "headgap"]
_Id = TypeVar("_Id", bound=Hashable)
STRATEGY_NAMES: tuple[StrategyName, ...] = ("maxgap", "headgap")


class NamedCut(Protocol):
    """A cut strategy the chain can run, with its name and where recency goes."""

    name: str
    owns_recency: bool

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision: ...


class HeadGapParams(BaseModel):
    """Tuning of the ``headgap`` strategy. Distances are the adjusted (language-reranked) ones."""

    model_config = ConfigDict(frozen=True)

    head: int = Field(5, ge=1, description="How many leading gaps are searched for a cut.")
    min_relative_gap: float = Field(
        0.06, ge=0, description="A gap counts when (d[i+1] - d[i]) / d[i] reaches this."
    )
    band: float = Field(
        0.08, ge=0, description="Without a gap: keep results within d1 · (1 + band) (and under the ceiling)."
    )
    ceiling: float | None = Field(
        None, gt=0, description="Abstain gate: keep nothing when the best result is farther (None = off)."
    )
    floor: float = Field(0.0, ge=0, description="Results this close are always kept (up to top_k).")
    min_prominence: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="Abstain unless d1 ≤ median(pool) · (1 - min_prominence) (0 = off).",
    )


class MaxGapCut:
    """The original's cut, with a profile's constants (``fallback`` replaces the configured threshold)."""

    name = "maxgap"
    owns_recency = False

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


def _result(
    threshold: float, method: str, n: int, gap: float | None = None, at: int | None = None
) -> AdaptiveThresholdResult:
    return AdaptiveThresholdResult.model_validate(
        {"threshold": threshold, "method": method, "candidate_count": n, "gap_size": gap, "gap_index": at}
    )


def head_gap_threshold(
    distances: Sequence[float], top_k: int, params: HeadGapParams
) -> AdaptiveThresholdResult:
    """The ``headgap`` decision over ``distances``: a threshold (keep ``≤ threshold``) and the branch.

    The only absolute number is ``ceiling``, a gate on the *best* candidate (abstain when even it is
    farther); which results are kept is decided by relative rules alone. ``empty``/``abstain`` return
    threshold -1 (nothing passes).
    """
    n = len(distances)
    if n == 0:
        return _result(-1.0, "headgap:empty", 0)
    d = sorted(distances)
    if params.ceiling is not None and d[0] > params.ceiling:
        return _result(-1.0, "headgap:abstain", n)
    if params.min_prominence > 0 and n >= 3 and d[0] > statistics.median(d) * (1 - params.min_prominence):
        return _result(-1.0, "headgap:abstain", n)
    # The largest relative gap among the first ``head`` gaps (first maximum wins).
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


def head_gap_select(
    plain: Sequence[tuple[_Id, float]],
    weighted: Sequence[tuple[_Id, float]] | None,
    top_k: int,
    params: HeadGapParams,
) -> tuple[list[_Id], AdaptiveThresholdResult]:
    """The ids ``headgap`` keeps, in final order, and the decision that names the branch.

    ``plain``: (id, distance without recency), ascending; ``weighted``: the same ids with recency-weighted
    distances, ascending, or None when recency is off. Pure, so calibration can replay it cheaply.
    """
    base = head_gap_threshold([d for _, d in plain], top_k, params)
    kept_plain = [i for i, d in plain if d <= base.threshold]
    if weighted is None or base.method in ("headgap:empty", "headgap:abstain"):
        return kept_plain[:top_k], base
    relative = params.model_copy(update={"ceiling": None, "min_prominence": 0.0, "floor": 0.0})
    decision = head_gap_threshold([w for _, w in weighted], top_k, relative)
    protected = set(kept_plain) if base.method == "headgap:gap" else set()
    first = [i for i, _ in weighted if i in protected][:top_k]
    rest = [i for i, w in weighted if i not in protected and w <= decision.threshold]
    chosen = set([*first, *rest][:top_k])
    return [i for i, _ in weighted if i in chosen], decision


class HeadGapCut:
    """The scale-free cut. It owns recency: weighting only re-orders, never removes a clear match.

    Without recency the decision is :func:`head_gap_threshold` on the reranked distances. With recency,
    the abstain gate still reads the distances without recency; when it passes, the relative rules run
    again on the recency-weighted distances, and the kept set is that of the weighted decision *plus*,
    when the unweighted list had a clear gap, everything before that gap (so a year-old finding that
    clearly matches survives); the result is ordered by weighted distance and the protected ones are
    never cut by ``top_k``.
    """

    name = "headgap"
    owns_recency = True

    def __init__(self, params: HeadGapParams | None = None) -> None:
        self.params = params or HeadGapParams()

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
        weighted = apply_recency_weighting(reranked, ctx.now, ctx.recency_config) if ctx.recency else None
        if not ctx.adaptive:
            # `adaptive: false` opts out of any adaptive cut: recency order, then the first top_k under the
            # configured threshold (isolation filtered by it), exactly as the original's non-adaptive path.
            return max_gap_cut(weighted if weighted is not None else reranked, ctx)
        ids, decision = head_gap_select(
            [(r.memory_id, r.adjusted_distance) for r in reranked],
            [(w.memory_id, w.adjusted_distance) for w in weighted] if weighted is not None else None,
            ctx.top_k,
            self.params,
        )
        by_id = {r.memory_id: r for r in (weighted if weighted is not None else reranked)}
        return CutDecision(results=[by_id[i] for i in ids], threshold=decision)


class FixedCut:
    """Keep adjusted distances ``≤ threshold`` then ``top_k``: the evaluation's fixed baselines."""

    owns_recency = False

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.name = f"fixed:{threshold:g}"

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
        kept = [r for r in reranked if r.adjusted_distance <= self.threshold]
        return CutDecision(
            results=kept[: ctx.top_k], threshold=_result(self.threshold, "fixed", len(reranked))
        )
