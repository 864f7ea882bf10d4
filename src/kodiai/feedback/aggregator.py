"""Aggregation of thumbs-down feedback into suppressible patterns (behaviour R2.29)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel

from kodiai.storage.knowledge_models import FeedbackPattern as FeedbackPattern  # the vectors name it here


class FeedbackThresholds(BaseModel):
    """``feedback.autoSuppress.thresholds``: all three must be met (inclusive)."""

    min_thumbs_down: int = 3
    min_distinct_reactors: int = 3
    min_distinct_prs: int = 2


class FeedbackPatternSource(Protocol):
    """What the aggregator needs from the knowledge store."""

    def aggregate_feedback_patterns(self, repo: str) -> Sequence[Any]:
        """Patterns as ``FeedbackPattern``-shaped objects or dicts, in a stable order."""
        ...


def meets_thresholds(pattern: FeedbackPattern, thresholds: FeedbackThresholds) -> bool:
    return (
        pattern.thumbs_down_count >= thresholds.min_thumbs_down
        and pattern.distinct_reactors >= thresholds.min_distinct_reactors
        and pattern.distinct_prs >= thresholds.min_distinct_prs
    )


def aggregate_suppressible_patterns(
    store: FeedbackPatternSource, repo: str, thresholds: FeedbackThresholds | Mapping[str, Any]
) -> list[FeedbackPattern]:
    """The store's patterns for ``repo`` that meet every threshold, in store order."""
    limits = FeedbackThresholds.model_validate(thresholds)
    rows = store.aggregate_feedback_patterns(repo)
    patterns = (FeedbackPattern.model_validate(p, from_attributes=True) for p in rows)
    return [p for p in patterns if meets_thresholds(p, limits)]
