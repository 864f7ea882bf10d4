"""Adaptive distance threshold: cut the candidate list at its largest natural gap (spec §2.24).

Exactly the original's algorithm; a later calibration strategy plugs in next to it, not into it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from kodiai.learning.types import ThresholdMethod


class AdaptiveThresholdConfig(BaseModel):
    """Tuning of the max-gap threshold; the defaults are the original's."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    min_candidates_for_gap: int = 8
    fallback_percentile: float = 0.75
    min_gap_size: float = 0.05
    floor: float = 0.15
    ceiling: float = 0.65


DEFAULT_ADAPTIVE_CONFIG = AdaptiveThresholdConfig()


class AdaptiveThresholdResult(BaseModel):
    """The threshold chosen, how, over how many candidates, and the gap that decided it (if any)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    threshold: float
    method: ThresholdMethod
    candidate_count: int
    gap_size: float | None = None
    gap_index: int | None = None


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
