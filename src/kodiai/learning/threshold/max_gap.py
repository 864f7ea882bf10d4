"""The original's cut: the adaptive max-gap threshold, at the largest natural gap of the candidate
distances (behaviour kept exactly for parity), and :class:`MaxGapCut`, the strategy that runs it in the chain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kodiai.learning.threshold.types import (
    AdaptiveThresholdConfig,
    AdaptiveThresholdResult,
    CutContext,
    CutDecision,
)
from kodiai.learning.types import RerankedResult

DEFAULT_ADAPTIVE_CONFIG = AdaptiveThresholdConfig()


def _clamp(value: float, config: AdaptiveThresholdConfig) -> float:
    """``Math.max(floor, Math.min(ceiling, value))``, NaN-propagating like JS."""
    if math.isnan(value):
        return math.nan
    return max(config.floor, min(config.ceiling, value))


def compute_adaptive_threshold(
    distances: Sequence[float],
    configured_threshold: float,
    config: AdaptiveThresholdConfig | dict[str, float] | None = None,
) -> AdaptiveThresholdResult:
    """Pick a distance threshold from the (post-rerank) candidate distances.

    - none → the clamped configured threshold (``configured``);
    - fewer than ``min_candidates_for_gap`` → the value at ``floor(n * fallback_percentile)`` (``percentile``);
    - else the largest adjacent gap (first maximum wins): below ``min_gap_size`` → clamped configured
      (``configured``, gap reported), otherwise the distance just below the gap (``adaptive``).
    Every threshold is clamped to ``[floor, ceiling]``.
    """
    cfg = (
        config
        if isinstance(config, AdaptiveThresholdConfig)
        else AdaptiveThresholdConfig.model_validate(config or {})
    )
    n = len(distances)
    if n == 0:
        return AdaptiveThresholdResult(
            threshold=_clamp(configured_threshold, cfg), method="configured", candidate_count=0
        )
    ordered = sorted(distances)
    if n < cfg.min_candidates_for_gap:
        idx = min(math.floor(n * cfg.fallback_percentile), n - 1)
        return AdaptiveThresholdResult(
            threshold=_clamp(ordered[idx], cfg), method="percentile", candidate_count=n
        )
    max_gap = 0.0
    gap_index = 0
    for i in range(1, n):
        gap = ordered[i] - ordered[i - 1]
        if gap > max_gap:
            max_gap = gap
            gap_index = i
    if max_gap < cfg.min_gap_size:
        return AdaptiveThresholdResult(
            threshold=_clamp(configured_threshold, cfg),
            method="configured",
            candidate_count=n,
            gap_size=max_gap,
        )
    # With min_gap_size <= 0 and no gap at all, the original reads index -1 (undefined) → NaN; kept.
    below_gap = ordered[gap_index - 1] if gap_index > 0 else math.nan
    return AdaptiveThresholdResult(
        threshold=_clamp(below_gap, cfg),
        method="adaptive",
        candidate_count=n,
        gap_size=max_gap,
        gap_index=gap_index,
    )


def max_gap_cut(reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
    """The original's cut. Adaptive: threshold from the adjusted distances, keep ``≤ threshold``, then
    ``top_k``. Not adaptive: the configured threshold as is (unclamped; isolation already filtered raw
    distances by it) and the first ``top_k``."""
    if not ctx.adaptive:
        threshold = AdaptiveThresholdResult(
            threshold=ctx.distance_threshold, method="configured", candidate_count=len(reranked)
        )
        return CutDecision(results=list(reranked[: ctx.top_k]), threshold=threshold)
    threshold = compute_adaptive_threshold(
        [r.adjusted_distance for r in reranked], ctx.distance_threshold, ctx.adaptive_config
    )
    kept = [r for r in reranked if r.adjusted_distance <= threshold.threshold]
    return CutDecision(results=kept[: ctx.top_k], threshold=threshold)


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
