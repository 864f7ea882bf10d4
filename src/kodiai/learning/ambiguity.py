"""Ambiguity (cluster) signal over the whole candidate pool (beyond the original).

When many candidates are about as similar to the query as the best one, the best one is not a
distinctive match: the memories form a cluster and which of them reach the prompt is close to arbitrary.
The count is taken on the full pool *before* any threshold or ``top_k`` cut. Taken on the final
``top_k`` results it would be meaningless: with ``top_k = 3``, "3 of 3 results within 0.90 of the best"
holds by construction whenever the results are close.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kodiai.learning.confidence import similarity_from_distance


class AmbiguityConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    similarity_ratio: float = 0.90
    """A candidate is in the best one's cluster when its similarity is at least this share of the best."""


class AmbiguitySignal(BaseModel):
    model_config = ConfigDict(frozen=True)

    pool_size: int
    cluster_size: int
    """Candidates (the best included) whose similarity is ≥ ``similarity_ratio`` × the best's; 0 for an empty pool."""
    ambiguous: bool
    """More candidates in the cluster than the retrieval can return (``cluster_size > top_k``)."""


def ambiguity_signal(pool_distances: Sequence[float], top_k: int, config: AmbiguityConfig) -> AmbiguitySignal:
    """Cluster size around the best candidate of the untruncated pool (raw Euclidean distances)."""
    similarities = [similarity_from_distance(d) for d in pool_distances]
    best = max(similarities, default=0.0)
    if not similarities or best <= 0.0:
        return AmbiguitySignal(pool_size=len(similarities), cluster_size=0, ambiguous=False)
    cluster = sum(1 for s in similarities if s >= config.similarity_ratio * best)
    return AmbiguitySignal(pool_size=len(similarities), cluster_size=cluster, ambiguous=cluster > top_k)
