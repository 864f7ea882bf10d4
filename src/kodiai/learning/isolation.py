"""Repo-scoped retrieval with the optional owner-wide shared pool (behaviour R2.25).

When the adaptive threshold will cut later, isolation fetches a wide, unfiltered pool
(``max(20, top_k * 4)``); otherwise it fetches ``top_k`` and applies the configured threshold itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict

from kodiai.learning.types import LearningMemoryRecord, MemoryHit, RetrievalResult
from kodiai.log import get_logger

ADAPTIVE_MIN_POOL = 20
ADAPTIVE_POOL_FACTOR = 4


class MemoryReader(Protocol):
    """What isolation needs from a memory store."""

    def retrieve_memories(
        self, query_embedding: Sequence[float] | np.ndarray, repo: str, top_k: int
    ) -> list[MemoryHit]: ...

    def retrieve_memories_for_owner(
        self, query_embedding: Sequence[float] | np.ndarray, owner: str, exclude_repo: str, top_k: int
    ) -> list[MemoryHit]: ...

    def get_memory_records(self, memory_ids: Sequence[int]) -> dict[int, LearningMemoryRecord]: ...


@runtime_checkable
class ReviewMemoryReader(Protocol):
    """A store that can also select memories by the review they came from (the re-review scope)."""

    def retrieve_review_memories(
        self,
        query_embedding: Sequence[float] | np.ndarray,
        repo: str,
        review_ids: Sequence[int],
        top_k: int,
    ) -> list[MemoryHit]: ...


class ProvenanceQuery(BaseModel):
    model_config = ConfigDict(frozen=True)

    repo: str
    top_k: int
    threshold: float
    adaptive: bool
    internal_top_k: int


class Provenance(BaseModel):
    """Where the candidates came from (the original's ``provenance``)."""

    model_config = ConfigDict(frozen=True)

    repo_sources: list[str]
    shared_pool_used: bool
    total_candidates: int
    query: ProvenanceQuery


class IsolationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    results: list[RetrievalResult]
    provenance: Provenance


def internal_top_k(top_k: int, adaptive: bool) -> int:
    """How many candidates isolation fetches: ``max(20, top_k * 4)`` when adaptive, else ``top_k``."""
    return max(ADAPTIVE_MIN_POOL, top_k * ADAPTIVE_POOL_FACTOR) if adaptive else top_k


class IsolationLayer:
    """Retrieval scoped to one repo (plus, when sharing is on, the owner's other repos)."""

    def __init__(self, memory_store: MemoryReader) -> None:
        self._store = memory_store
        self._log = get_logger("kodiai.learning.isolation")

    def retrieve_for_reviews(
        self,
        *,
        query_embedding: Sequence[float] | np.ndarray,
        repo: str,
        review_ids: frozenset[int],
        limit: int,
    ) -> list[RetrievalResult]:
        """The ``limit`` nearest live memories of ``repo`` written by ``review_ids`` (nearest first), found
        by a filtered query rather than in the vector pool, so a PR's own memory that is far from the
        query is still seen. Raises ``TypeError`` when the store cannot filter by review."""
        if not review_ids or limit <= 0:
            return []
        if not isinstance(self._store, ReviewMemoryReader):
            raise TypeError(f"{type(self._store).__name__} cannot select memories by review")
        hits = self._store.retrieve_review_memories(query_embedding, repo, sorted(review_ids), limit)
        return self._resolve(hits)

    def _resolve(self, hits: Sequence[MemoryHit]) -> list[RetrievalResult]:
        records = self._store.get_memory_records([h.memory_id for h in hits])
        results: list[RetrievalResult] = []
        for hit in hits:
            record = records.get(hit.memory_id)
            if record is None:
                self._log.debug("Memory record missing; skipped", memory_id=hit.memory_id)
                continue
            results.append(
                RetrievalResult(
                    memory_id=hit.memory_id,
                    distance=hit.distance,
                    record=record,
                    source_repo=record.source_repo,
                )
            )
        return results

    def retrieve_with_isolation(
        self,
        *,
        query_embedding: Sequence[float] | np.ndarray,
        repo: str,
        owner: str,
        sharing_enabled: bool,
        top_k: int,
        distance_threshold: float,
        adaptive: bool = True,
    ) -> IsolationResult:
        """Repo hits first, then the shared pool; de-duplicated (first wins), sorted, cut, resolved."""
        k = internal_top_k(top_k, adaptive)

        def keep(hits: list[MemoryHit]) -> list[MemoryHit]:
            return hits if adaptive else [h for h in hits if h.distance <= distance_threshold]

        repo_hits = keep(self._store.retrieve_memories(query_embedding, repo, k))
        shared_hits: list[MemoryHit] = []
        if sharing_enabled:
            shared_hits = keep(self._store.retrieve_memories_for_owner(query_embedding, owner, repo, k))
        merged: dict[int, MemoryHit] = {}
        for hit in [*repo_hits, *shared_hits]:
            merged.setdefault(hit.memory_id, hit)
        ordered = sorted(merged.values(), key=lambda h: h.distance)[:k]
        results = self._resolve(ordered)
        sources = list(dict.fromkeys(r.source_repo for r in results))
        provenance = Provenance(
            repo_sources=sources,
            shared_pool_used=sharing_enabled and len(shared_hits) > 0,
            total_candidates=len(repo_hits) + len(shared_hits),
            query=ProvenanceQuery(
                repo=repo, top_k=top_k, threshold=distance_threshold, adaptive=adaptive, internal_top_k=k
            ),
        )
        return IsolationResult(results=results, provenance=provenance)
