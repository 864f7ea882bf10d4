"""Confidence labels for retrieved memories (beyond the original).

A label says how much a memory deserves the model's attention, from two facts about its similarity
``s = 1 - d²/2`` (cosine similarity of unit vectors at Euclidean distance ``d``, clamped to [0, 1]):

- the ratio ``s / s_best`` to the best result of the same retrieval, and
- an absolute floor, so a lone weak match is never "high" just because it is the best of a weak set.

``high`` needs ratio ≥ 0.75 and ``s`` ≥ ``high_min_similarity``; ``medium`` needs ratio ≥ 0.40 and
``s`` ≥ ``medium_min_similarity``; everything else is ``low``. Equal distances always get equal labels
(the label is a function of the distance and the best similarity only). No results → no labels; a best
similarity of 0 makes every label ``low``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

ConfidenceLabel = Literal["high", "medium", "low"]


class ConfidenceConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    high_ratio: float = 0.75
    medium_ratio: float = 0.40
    high_min_similarity: float = 0.80
    medium_min_similarity: float = 0.60


DEFAULT_CONFIDENCE_CONFIG = ConfidenceConfig()


def similarity_from_distance(distance: float) -> float:
    """Cosine similarity of two unit vectors at Euclidean ``distance``, clamped to [0, 1]."""
    return min(1.0, max(0.0, 1.0 - distance * distance / 2.0))


def label_for(
    similarity: float, best: float, config: ConfidenceConfig = DEFAULT_CONFIDENCE_CONFIG
) -> ConfidenceLabel:
    """The label of one result whose similarity is ``similarity`` when the best one's is ``best``."""
    if best <= 0.0:
        return "low"
    ratio = similarity / best
    if ratio >= config.high_ratio and similarity >= config.high_min_similarity:
        return "high"
    if ratio >= config.medium_ratio and similarity >= config.medium_min_similarity:
        return "medium"
    return "low"


def confidence_labels(
    distances: Sequence[float], config: ConfidenceConfig = DEFAULT_CONFIDENCE_CONFIG
) -> list[ConfidenceLabel]:
    """One label per distance (raw Euclidean distances of the final results), in the same order."""
    similarities = [similarity_from_distance(d) for d in distances]
    best = max(similarities, default=0.0)
    return [label_for(s, best, config) for s in similarities]


def label_counts(labels: Sequence[ConfidenceLabel]) -> dict[ConfidenceLabel, int]:
    return {name: sum(1 for label in labels if label == name) for name in ("high", "medium", "low")}
