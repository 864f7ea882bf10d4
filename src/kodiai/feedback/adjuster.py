"""Feedback-driven confidence adjustment and the suppression evaluation (behaviour R2.29, step 40).

``evaluate_feedback_suppressions`` is fail-open: any store error gives the empty result and a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kodiai.config.models import AutoSuppressConfig as RepoAutoSuppress
from kodiai.feedback.aggregator import (
    FeedbackPattern,
    FeedbackPatternSource,
    FeedbackThresholds,
    aggregate_suppressible_patterns,
)
from kodiai.feedback.safety import is_feedback_suppression_protected
from kodiai.log import get_logger

THUMBS_UP_BOOST = 10
THUMBS_DOWN_PENALTY = 20
FAIL_OPEN_WARNING = "Failed to evaluate feedback suppressions, returning empty result (fail-open)"


class FeedbackCounts(BaseModel):
    thumbs_up: int | float
    thumbs_down: int | float


class AutoSuppressConfig(BaseModel):
    """``feedback.autoSuppress`` (accepts the camelCase keys of ``.kodiai.yml`` too)."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")

    enabled: bool = False
    thresholds: FeedbackThresholds = Field(default_factory=FeedbackThresholds)


class FeedbackSuppressionResult(BaseModel):
    suppressed_fingerprints: set[str] = Field(default_factory=set)
    suppressed_pattern_count: int = 0
    patterns: list[FeedbackPattern] = Field(default_factory=list)


def adjust_confidence_for_feedback(
    base_confidence: int | float, feedback: FeedbackCounts | Mapping[str, Any]
) -> int | float:
    """``clamp(base + 10·up − 20·down, 0, 100)``."""
    counts = FeedbackCounts.model_validate(feedback)
    value = base_confidence + THUMBS_UP_BOOST * counts.thumbs_up - THUMBS_DOWN_PENALTY * counts.thumbs_down
    return max(0, min(100, value))


def _config(config: RepoAutoSuppress | AutoSuppressConfig | Mapping[str, Any] | None) -> AutoSuppressConfig:
    if config is None:
        return AutoSuppressConfig()
    if isinstance(config, AutoSuppressConfig):
        return config
    if isinstance(config, RepoAutoSuppress):  # the validated ``.kodiai.yml`` section, read field by field
        return AutoSuppressConfig.model_validate(config, from_attributes=True)
    data = dict(config)
    thresholds = data.get("thresholds")
    if isinstance(thresholds, Mapping):
        aliases = {
            "minThumbsDown": "min_thumbs_down",
            "minDistinctReactors": "min_distinct_reactors",
            "minDistinctPRs": "min_distinct_prs",
        }
        data["thresholds"] = {aliases.get(k, k): v for k, v in thresholds.items()}
    return AutoSuppressConfig.model_validate(data)


def evaluate_feedback_suppressions(
    store: FeedbackPatternSource | None,
    repo: str,
    config: RepoAutoSuppress | AutoSuppressConfig | Mapping[str, Any] | None,
    delivery_id: str | None = None,
) -> FeedbackSuppressionResult:
    """Patterns that pass the thresholds and are not protected by the safety guard.

    Disabled (the default) or no store → the empty result without touching the store. A store error →
    a warning and the empty result (fail-open).
    """
    cfg = _config(config)
    if not cfg.enabled or store is None:
        return FeedbackSuppressionResult()
    try:
        candidates = aggregate_suppressible_patterns(store, repo, cfg.thresholds)
    except Exception as exc:
        get_logger(__name__, delivery_id=delivery_id).warning(FAIL_OPEN_WARNING, repo=repo, error=str(exc))
        return FeedbackSuppressionResult()
    patterns = [
        p
        for p in candidates
        if not is_feedback_suppression_protected({"severity": p.severity, "category": p.category})
    ]
    return FeedbackSuppressionResult(
        suppressed_fingerprints={p.fingerprint for p in patterns},
        suppressed_pattern_count=len(patterns),
        patterns=patterns,
    )
